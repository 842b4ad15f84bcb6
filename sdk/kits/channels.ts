/**
 * `spar/sdk/channels`: what a messaging platform's plugin is built on. The gate (allowlist, a
 * sender's rate, a delivery taken in once), the relay (a chat's own bout with the channel's fighter,
 * typing while the turn runs, the reply split to the platform's limit and posted, the chat recorded
 * as one `channel_notify` may post to, `channel.inbound`/`channel.outbound` events), the status
 * counts and `notify_chat`, the three bundled platforms' delivery signatures, and the kit's records:
 * the collections `bouts`, `deliveries` and `chats` every channel plugin (and moves-channels)
 * declares alike under the namespace "channels" (see channel-telegram's plugin.json). A platform
 * brings only its `PlatformIo` (typing, posting, its length limit) and its webhook or socket.
 * Approve / Deny buttons (`ChannelAdapter.approvals`): the prompt's text and the buttons' payload
 * (`approvalPrompt`, `approvalText`, `approvalAction`), and the desk that says who may press
 * (`createApprovalDesk`). channel-telegram, channel-slack, channel-discord and moves-channels are built on these alone;
 * such a plugin declares `"uses": ["fighters", "bouts"]` (and `"tunnel"` to open the public URL).
 *
 * @example
 * import { createChannelGate, createChannelRecords, createChannelRelay } from "spar/sdk/channels";
 * apply({ ring, data, events, log }, { "channels.example": settings }) {
 *   const records = createChannelRecords(data, ring);
 *   const gate = createChannelGate({ platform: "example", allowlist: settings.allowlist, rate_per_minute: 20, deliveries: records.deliveries });
 *   const relay = createChannelRelay({ platform: "example", fighter: settings.fighter, io, ring, records, events, log });
 * }
 */
export { notifyTarget, trafficStatus } from "../../lib/channels/adapter.js";
export {
  type ApprovalDesk,
  approvalAction,
  approvalPrompt,
  approvalText,
  CALLBACK_DATA_MAX,
  createApprovalDesk,
  endedText,
  maskSecrets,
  NOT_ALLOWED,
  outcomeLine,
  type PromptSource,
  readApprovalAction,
  withOutcome,
} from "../../lib/channels/approvals.js";
export { type ChannelGate, createChannelGate, type GateVerdict } from "../../lib/channels/gate.js";
export {
  type ChannelBoutDoc,
  type ChannelChatDoc,
  type ChannelDeliveryDoc,
  type ChannelRecords,
  createChannelRecords,
  recordKey,
} from "../../lib/channels/records.js";
export {
  type ChannelRelay,
  createChannelRelay,
  type InboundMessage,
  type PlatformIo,
} from "../../lib/channels/relay.js";
export { splitMessage } from "../../lib/channels/split.js";
export {
  DISCORD_INTERACTION_WINDOW_S,
  DISCORD_SIGNATURE_WINDOW_S,
  discordDeliveryOk,
  discordPublicKey,
  discordTimestampFresh,
  SLACK_WINDOW_S,
  slackDeliveryOk,
  slackSignature,
  snowflakeFresh,
  telegramDeliveryOk,
} from "../../lib/channels/verify.js";
export { warnAboutSettings } from "../../lib/channels/warnings.js";
