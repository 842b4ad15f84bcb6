/**
 * Telegram's side of webhook mode, done at every start: the token checked with getMe, then the
 * tunnel's URL registered with setWebhook and the secret Telegram must send back. A quick tunnel's
 * URL changes every run, so registering once at setup would not do. Nothing here may stop the
 * daemon: a failure is logged and kept for `spar channel status`.
 */
import type { Api } from "grammy";
import type { Logger, TunnelInfo } from "../../sdk/index.js";

/**
 * grammy types its signals as the `abort-controller` package's; at run time it needs only
 * `addEventListener`, which Node's own AbortSignal has.
 */
type GrammySignal = Parameters<Api["getMe"]>[0];

export interface Registration {
  /** Whether the last registration succeeded. */
  connected: boolean;
  /** The URL registered (or being registered). */
  url?: string;
  /** The bot's @username, once getMe answered. */
  bot?: string;
  /** Why the channel is not connected. */
  error?: string;
}

/**
 * Why a Bot API call failed, in words safe to log: grammy's messages never carry the token (it is in
 * the URL, which they leave out), and the network error's code says more than "request failed".
 */
export function apiProblem(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const inner = (err as { error?: { code?: unknown } }).error;
  const code = typeof inner?.code === "string" ? ` (${inner.code})` : "";
  return `${err.message}${code}`;
}

/**
 * Checks the token and registers the webhook at `<tunnel URL><path>`, updating `state` as it goes.
 * Never throws.
 */
export async function registerWebhook(options: {
  api: Api;
  tunnel: () => Promise<TunnelInfo>;
  path: string;
  secret: string;
  tokenEnv: string;
  state: Registration;
  log: Logger;
  /** Fires when the daemon stops: a call still waiting for Telegram is given up. */
  signal?: AbortSignal;
}): Promise<void> {
  const { api, state, log } = options;
  const signal = options.signal as GrammySignal;
  state.connected = false;
  try {
    const me = await api.getMe(signal);
    state.bot = me.username;
  } catch (err) {
    if (signal?.aborted) return;
    state.error = `the bot token in ${options.tokenEnv} was not accepted by Telegram (getMe: ${apiProblem(err)}); run \`spar channel setup telegram\``;
    log.error("telegram: bot token refused", { error: state.error });
    return;
  }
  let url: string;
  try {
    url = `${(await options.tunnel()).url}${options.path}`;
  } catch (err) {
    state.error = `no tunnel, so no webhook: ${err instanceof Error ? err.message : String(err)}`;
    log.error("telegram: webhook not registered", { error: state.error });
    return;
  }
  state.url = url;
  try {
    await api.setWebhook(
      url,
      { secret_token: options.secret, allowed_updates: ["message", "callback_query"] },
      signal,
    );
  } catch (err) {
    if (signal?.aborted) return;
    state.error = `setWebhook ${url} failed: ${apiProblem(err)}`;
    log.error("telegram: webhook not registered", { error: state.error });
    return;
  }
  state.connected = true;
  delete state.error;
  log.info("telegram: webhook registered", { url, bot: state.bot });
}
