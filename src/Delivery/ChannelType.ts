import type { Schema } from "effect"
import type { Channel } from "./Channel.js"

/**
 * One type of alert channel of the channels resource (docs/alerts.md; `/api/alerts/channels`):
 * what its `config` is, which of its fields are secrets and how GET shows them, which are urls
 * (the SSRF guard checks those), and its `Channel` (Channel.ts: the payload of each event, how it
 * is carried, what the provider's answers mean). One module per type exports one of these
 * (SlackChannel.ts, EmailChannel.ts, …) and ChannelRegistry.ts lists it: the API, the fan-out,
 * the attempts, the reminders and the test endpoint then serve it (docs/architecture.md, "How to
 * add an alert channel"). Pure: no Effect services.
 */

/** What channels may read of the service's settings. */
export interface ChannelSettings {
  /** The dashboard's address, for links (PUBLIC_URL). */
  readonly publicUrl: string
  /** Whether SMTP_URL is set (email can be sent). */
  readonly emailConfigured: boolean
}

/**
 * How GET shows a secret field of `config`: `masked` (its shape kept, the secret part as `***`,
 * e.g. a webhook url), or `omitted` (not shown at all, e.g. an API key). Either way a PATCH that
 * leaves the field out, or sends back exactly what GET showed, keeps the stored value.
 */
export type SecretField =
  | { readonly shown: "masked"; readonly mask: (value: string) => string }
  | { readonly shown: "omitted" }

/** A stored channel as its module reads it. */
export interface StoredChannel<Config> {
  readonly id: string
  readonly name: string
  readonly config: Config
}

export interface AlertChannelType<Config extends object, Destination> {
  /** The `type` of the API and of `alert_channels.type`: `slack`, `email`, … */
  readonly type: string
  /**
   * The `config` the API takes, decoded from the request's JSON; a failure is a 400 naming the
   * field as `config.<field>`. Refuse NUL in every string (`StoredString`): it is stored as jsonb.
   */
  readonly config: Schema.Schema<Config, any>
  /** The secret fields of `config`, and how GET shows each. */
  readonly secrets: { readonly [K in keyof Config]?: SecretField }
  /** The fields of `config` that hold urls the service posts to: checked by the SSRF guard (path `config.<field>`). */
  readonly urlFields: ReadonlyArray<keyof Config & string>
  /** The channel's name when the request gives none. */
  readonly defaultName: (config: Config) => string
  /** Why channels of this type cannot be made on this server (email without SMTP_URL), or undefined. */
  readonly unavailable: (settings: ChannelSettings) => string | undefined
  /** The channel module. */
  readonly channel: (settings: ChannelSettings) => Channel<Destination>
  /** A stored channel as its channel module reads it. */
  readonly destinationOf: (stored: StoredChannel<Config>) => Destination
}

/** Any type (the registry holds several; each reads only its own channels). */
export type AnyAlertChannelType = AlertChannelType<any, any>
