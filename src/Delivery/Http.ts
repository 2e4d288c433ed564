import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { DEFAULT_PAGE_LIMIT } from "../Domain/Schemas.js"
import { Api } from "../Http/Api.js"
import { AlertChannels } from "./AlertChannels.js"
import { Webhooks } from "./Webhooks.js"

export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.create(p.orgId, payload)))
      .handle("list", () => Effect.map(Effect.flatMap(CurrentPrincipal, (p) => webhooks.list(p.orgId)), (list) => ({ webhooks: list })))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.get(p.orgId, path.webhookId)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) => webhooks.update(p.orgId, path.webhookId, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.remove(p.orgId, path.webhookId)))
      .handle("test", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.test(p.orgId, path.webhookId)))
      .handle("deliveries", ({ path, urlParams }) =>
        Effect.map(
          Effect.flatMap(CurrentPrincipal, (p) => webhooks.deliveries(p.orgId, path.webhookId, urlParams.limit ?? DEFAULT_PAGE_LIMIT)),
          (deliveries) => ({ deliveries })
        ))
  })
)

export const ChatHttpLive = HttpApiBuilder.group(Api, "chat", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.chatCreate(p.orgId, payload)))
      .handle("list", () => Effect.map(Effect.flatMap(CurrentPrincipal, (p) => webhooks.chatList(p.orgId)), (list) => ({ webhooks: list })))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.chatGet(p.orgId, path.webhookId)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) => webhooks.chatUpdate(p.orgId, path.webhookId, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.chatRemove(p.orgId, path.webhookId)))
      .handle("test", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => webhooks.chatTest(p.orgId, payload.webhookId)))
  })
)

export const AlertChannelsHttpLive = HttpApiBuilder.group(Api, "channels", (handlers) =>
  Effect.gen(function*() {
    const channels = yield* AlertChannels
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => channels.create(p.orgId, payload)))
      .handle("list", () => Effect.map(Effect.flatMap(CurrentPrincipal, (p) => channels.list(p.orgId)), (list) => ({ channels: list })))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => channels.get(p.orgId, path.channelId)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => channels.update(p.orgId, path.channelId, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => channels.remove(p.orgId, path.channelId)))
      .handle("test", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => channels.test(p.orgId, path.channelId)))
      .handle("deliveries", ({ path, urlParams }) =>
        Effect.map(
          Effect.flatMap(CurrentPrincipal, (p) => channels.deliveries(p.orgId, path.channelId, urlParams.limit ?? DEFAULT_PAGE_LIMIT)),
          (deliveries) => ({ deliveries })
        ))
  })
)
