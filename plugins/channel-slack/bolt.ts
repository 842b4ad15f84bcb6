/**
 * The bolt App behind the channel. Bolt normally brings its own HTTP server (a receiver); here the
 * Arena's webhook listener is the server, so the App gets a receiver that only hands it the events
 * our webhook route has verified and gated (`dispatch`, through `app.processEvent`). Bolt then runs
 * its own middleware (it ignores the bot's own messages, once more) and the `message` listener, and
 * its WebClient, pointed at `<api_root>/api/`, makes every outbound call.
 */
import { App, type Logger as BoltLogger, LogLevel, type Receiver, type webApi } from "@slack/bolt";
import type { Logger } from "../../sdk/index.js";

/** A plain message from a member, as the `message` listener hands it on. */
export interface SlackMessage {
  chat: string;
  sender: string;
  text: string;
  /** The message's timestamp: its id within the channel (reactions name it). */
  ts: string;
}

export interface SlackBolt {
  /** Bolt's Web API client, with the bot token. */
  readonly client: webApi.WebClient;
  /** Bolt's initialization: auth.test with the token; throws when Slack refuses it or cannot be reached. */
  connect(): Promise<void>;
  /** Hands a verified `event_callback` body to bolt; settles once its listener has finished. */
  dispatch(body: Record<string, unknown>, retry?: { num: number; reason?: string }): Promise<void>;
}

/**
 * A Web API failure in a few words, never with the token: Slack's own error (`invalid_auth`,
 * `channel_not_found`, …), the HTTP status, or why the request did not get through.
 */
export function slackErrorText(err: unknown): string {
  const e = err as {
    data?: { error?: unknown };
    statusCode?: unknown;
    original?: { message?: unknown };
    message?: unknown;
  };
  if (typeof e?.data?.error === "string") return e.data.error;
  if (typeof e?.statusCode === "number") return `HTTP ${e.statusCode}`;
  if (typeof e?.original?.message === "string") return e.original.message;
  return typeof e?.message === "string" ? e.message : String(err);
}

/** How long one Web API call may take before it is abandoned. */
const CALL_TIMEOUT_MS = 30_000;

/** Bolt's logger interface on top of the daemon's: debug dropped (web-api puts request bodies there). */
function boltLogger(log: Logger): BoltLogger {
  let level = LogLevel.INFO;
  const line = (parts: unknown[]) =>
    `slack: ${parts.map((p) => (p instanceof Error ? p.message : String(p))).join(" ")}`;
  return {
    debug: () => undefined,
    info: (...parts: unknown[]) => log.info(line(parts)),
    warn: (...parts: unknown[]) => log.warn(line(parts)),
    error: (...parts: unknown[]) => log.error(line(parts)),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}

/**
 * The receiver bolt requires. The Arena's webhook listener is the server and `dispatch` calls
 * `app.processEvent` directly, so there is nothing to open, close, or keep.
 */
class RouteReceiver implements Receiver {
  init(): void {}

  async start(): Promise<void> {}

  async stop(): Promise<void> {}
}

export function createSlackBolt(options: {
  token: string;
  apiRoot: string;
  log: Logger;
  onMessage(message: SlackMessage): Promise<void>;
}): SlackBolt {
  const app = new App({
    token: options.token,
    receiver: new RouteReceiver(),
    // auth.test runs when the daemon is ready (connect), not in the constructor.
    deferInitialization: true,
    convoStore: false,
    logger: boltLogger(options.log),
    clientOptions: {
      slackApiUrl: `${options.apiRoot}/api/`,
      timeout: CALL_TIMEOUT_MS,
      // web-api's default retries a failed call for half an hour; a reply that late helps nobody.
      retryConfig: { retries: 2, minTimeout: 1_000, maxTimeout: 5_000 },
    },
  });

  app.message(async ({ message }) => {
    // The webhook route passes on only plain messages; this narrows bolt's union of subtypes.
    if (message.subtype !== undefined || typeof message.user !== "string" || typeof message.text !== "string")
      return;
    await options.onMessage({
      chat: message.channel,
      sender: message.user,
      text: message.text,
      ts: message.ts,
    });
  });

  return {
    client: app.client,
    connect: () => app.init(),
    async dispatch(body, retry) {
      await app.processEvent({
        body,
        // The webhook route has already answered Slack: there is nothing left to acknowledge.
        ack: async () => undefined,
        ...(retry ? { retryNum: retry.num, ...(retry.reason ? { retryReason: retry.reason } : {}) } : {}),
      });
    },
  };
}
