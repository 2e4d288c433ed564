/**
 * The API's resources as the dashboard reads them: the types of the service's own schemas
 * (src/<Domain>/Api.ts). The imports are types only, erased from the bundle: the dashboard ships
 * none of the service's code, and a field the API renames or drops fails `npm run typecheck` here.
 */
import type { SessionOrganizations as SessionOrganizationsSchema, SessionUser, TokenInfo, UserInfo } from "../../src/Auth/Api"
import type { AlertChannel, AlertChannelType, ChannelTestResult, ChatWebhook, Delivery, UpdateAlertChannelRequest, Webhook } from "../../src/Delivery/Api"
import type { Incident } from "../../src/Incidents/Api"
import type { HistoryEntry, MaintenanceWindow } from "../../src/Maintenance/Api"
import type { Monitor, MonitorPage as MonitorPageSchema, MonitorSort, MonitorSummary, ScheduleSchema } from "../../src/Monitors/Api"
import type { Run, RunSummary } from "../../src/Pings/Api"
import type { DurationStatistics, PercentileValues } from "../../src/Stats/Api"

export type { AlertChannel, AlertChannelType, ChatWebhook, Delivery, HistoryEntry, Incident, MaintenanceWindow, Monitor, MonitorSort, MonitorSummary, Run, RunSummary, Webhook }

/** The signed-in user (GET /api/auth/me). */
export type User = typeof SessionUser.Type
/** GET /api/auth/orgs: the user's organizations and the session's current one. */
export type SessionOrganizations = typeof SessionOrganizationsSchema.Type
export type Schedule = typeof ScheduleSchema.Type
/** GET /api/monitors: one page of the filtered, sorted list. */
export type MonitorPage = typeof MonitorPageSchema.Type
/** GET /api/monitors/{id}/percentiles. */
export type Statistics = typeof DurationStatistics.Type
export type Percentiles = typeof PercentileValues.Type
/** GET /api/tokens. */
export type Token = typeof TokenInfo.Type
/** GET /api/users. */
export type UserRow = typeof UserInfo.Type
/** POST /api/alerts/channels/{id}/test. */
export type ChannelTest = typeof ChannelTestResult.Type
/** PATCH /api/alerts/channels/{id}. */
export type ChannelUpdate = typeof UpdateAlertChannelRequest.Type
/** A channel's routing rules and reminders. */
export type ChannelRules = AlertChannel["rules"]
export type ChannelReminders = AlertChannel["reminders"]
