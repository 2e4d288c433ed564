/**
 * How many of each delivery target one organization may have (docs/delivery.md#quotas). Deleted
 * ones do not count. Over it, creating another answers 409 Conflict.
 */
export const ORGANIZATION_QUOTAS = {
  /** Outbound webhooks (POST /api/webhooks). */
  webhooks: 100,
  /** Chat alert webhooks (POST /api/alerts/chat/webhooks). */
  chatWebhooks: 100,
  /** Alert channels of the other types (POST /api/alerts/channels; discord ones count as chat webhooks). */
  alertChannels: 100
} as const
