/**
 * What `spar channel` knows of each platform: where its token comes from, what its user ids look
 * like (and how to find one), and the few API calls the wizard makes, with plain `fetch` against the
 * platform's API root (the real one, a self-hosted Bot API server, or a test's fake): the token
 * checked (Telegram `getMe`, Slack `auth.test`, Discord `GET /users/@me` and the application), and
 * Telegram's webhook set or deleted. No message here ever contains a token: URLs that carry one
 * (Telegram's `/bot<token>/…`) are never shown, only the API root.
 */
import { SparError } from "../../sdk/errors.js";

export type PlatformId = "telegram" | "slack" | "discord";

export interface Platform {
  id: PlatformId;
  title: string;
  /** The variable the bot token is saved under (`token_env`). */
  tokenEnv: string;
  /** Where to get the token, for prompts and errors. */
  tokenHelp: string;
  /** Refuses a string that cannot be this platform's token, before anything is sent. */
  checkToken(token: string): void;
  /** The allowlist's ids: what they look like and how to find one. */
  idHelp: string;
  /** The same in a few words, for the prompt. */
  idHint: string;
  /** One allowlist entry as config.toml takes it; a clear VALIDATION_FAILED otherwise. */
  parseId(entry: string): number | string;
  /** The platform's API root when the table names none. */
  defaultApiRoot: string;
  /** Asks the platform who the token belongs to; a refused token is VALIDATION_FAILED. */
  whoAmI(apiRoot: string, token: string): Promise<BotIdentity>;
}

export interface BotIdentity {
  /** How to show the bot: `@spar_bot`, `spar in Spar Test`. */
  name: string;
  id: string;
}

const refuse = (message: string) => new SparError("VALIDATION_FAILED", message);

const TELEGRAM_ID_HELP =
  "Telegram's allowlist takes numeric user ids, not @usernames (a username can be changed or taken over). " +
  "To find yours, message @userinfobot on Telegram: it answers with your id. Or send your bot a message " +
  "and read message.from.id in the update";

export const PLATFORMS: Record<PlatformId, Platform> = {
  telegram: {
    id: "telegram",
    title: "Telegram",
    tokenEnv: "TELEGRAM_BOT_TOKEN",
    tokenHelp: "the token @BotFather gave you (/newbot), like 123456789:AAE…",
    checkToken(token) {
      if (!/^\d{1,20}:[A-Za-z0-9_-]{20,}$/.test(token)) {
        throw refuse(
          "that is not a Telegram bot token: @BotFather's tokens are digits, a colon, then letters, digits, - and _ (like 123456789:AAE…)",
        );
      }
    },
    idHelp: TELEGRAM_ID_HELP,
    idHint: "numeric user ids; @userinfobot tells you yours",
    parseId(entry) {
      if (entry.startsWith("@")) throw refuse(`"${entry}" is a username. ${TELEGRAM_ID_HELP}`);
      const id = Number(entry);
      if (!/^\d+$/.test(entry) || !Number.isSafeInteger(id) || id < 1) {
        throw refuse(`"${entry}" is not a Telegram user id (a number like 123456789). ${TELEGRAM_ID_HELP}`);
      }
      return id;
    },
    defaultApiRoot: "https://api.telegram.org",
    async whoAmI(apiRoot, token) {
      const me = (await telegram(apiRoot, token, "getMe", {})) as { id?: unknown; username?: unknown };
      return { name: `@${String(me.username)}`, id: String(me.id) };
    },
  },
  slack: {
    id: "slack",
    title: "Slack",
    tokenEnv: "SLACK_BOT_TOKEN",
    tokenHelp: "the app's Bot User OAuth Token (api.slack.com/apps → your app → OAuth & Permissions), xoxb-…",
    checkToken(token) {
      if (!/^xoxb-[A-Za-z0-9-]+$/.test(token)) {
        throw refuse(
          "that is not a Slack bot token: the Bot User OAuth Token starts with xoxb- (api.slack.com/apps → your app → OAuth & Permissions)",
        );
      }
    },
    idHelp:
      "Slack's allowlist takes member ids like U012AB3CDE, not names or @handles. To find one, open the " +
      "person's profile in Slack, ⋮ More, Copy member ID",
    idHint: "member ids like U012AB3CDE; a profile's ⋮ More, Copy member ID",
    parseId(entry) {
      const id = entry.toUpperCase();
      if (!/^[UW][A-Z0-9]{2,}$/.test(id)) {
        throw refuse(`"${entry}" is not a Slack member id. ${PLATFORMS.slack.idHelp}`);
      }
      return id;
    },
    defaultApiRoot: "https://slack.com",
    async whoAmI(apiRoot, token) {
      const { body } = await request("Slack", apiRoot, `${apiRoot}/api/auth.test`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
        body: "",
      });
      const answer = (body ?? {}) as {
        ok?: boolean;
        error?: string;
        user?: string;
        team?: string;
        user_id?: string;
      };
      if (answer.ok !== true) {
        const why = answer.error ?? "no answer";
        if (
          why === "invalid_auth" ||
          why === "not_authed" ||
          why === "account_inactive" ||
          why === "token_revoked"
        ) {
          throw refuse(`Slack refused the token (auth.test: ${why}); copy it again from OAuth & Permissions`);
        }
        throw new SparError("PROVIDER_ERROR", `Slack's auth.test failed: ${why}`);
      }
      return { name: `${answer.user} in ${answer.team}`, id: String(answer.user_id) };
    },
  },
  discord: {
    id: "discord",
    title: "Discord",
    tokenEnv: "DISCORD_BOT_TOKEN",
    tokenHelp: "the bot's token (discord.com/developers/applications → your application → Bot → Reset Token)",
    checkToken(token) {
      if (!/^[A-Za-z0-9._-]{20,}$/.test(token)) {
        throw refuse(
          "that is not a Discord bot token (at least 20 characters of letters, digits, . _ and -): copy it from the Developer Portal, Bot → Reset Token",
        );
      }
    },
    idHelp:
      "Discord's allowlist takes user ids (17 to 20 digits), not names. To find one, turn on Developer Mode " +
      "(User Settings → Advanced), then right-click the user and Copy User ID",
    idHint: "user ids of 17 to 20 digits; right-click a user, Copy User ID",
    parseId(entry) {
      if (!/^\d{17,20}$/.test(entry))
        throw refuse(`"${entry}" is not a Discord user id. ${PLATFORMS.discord.idHelp}`);
      return entry;
    },
    defaultApiRoot: "https://discord.com",
    async whoAmI(apiRoot, token) {
      const me = (await discord(apiRoot, token, "GET", "/users/@me")) as { id?: unknown; username?: unknown };
      return { name: String(me.username), id: String(me.id) };
    },
  },
};

/** The platform named on the command line. */
export function platformOf(name: string): Platform {
  const platform = PLATFORMS[name as PlatformId];
  if (!platform || !Object.hasOwn(PLATFORMS, name)) {
    throw refuse(`unknown platform "${name}"; platforms: ${Object.keys(PLATFORMS).join(", ")}`);
  }
  return platform;
}

/** `--allow` (or the prompt's answer): ids separated by commas or spaces, each checked, none twice. */
export function parseAllowlist(platform: Platform, text: string): (number | string)[] {
  const entries = text
    .split(/[\s,]+/)
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) {
    throw refuse(
      `an empty allowlist means nobody can talk to the bot: give the ids of the people who may (--allow <id,id>). ${platform.idHelp}`,
    );
  }
  return [...new Set(entries.map((e) => platform.parseId(e)))];
}

/**
 * `--owner` (whose messages are the operator's own): ids like `--allow`'s, each on the allowlist;
 * `none` names nobody. Absent: the saved owners, still checked against the allowlist.
 */
export function parseOwners(
  platform: Platform,
  text: string | undefined,
  saved: unknown,
  allowlist: readonly (number | string)[],
): (number | string)[] {
  if (text?.trim() === "none") return [];
  const entries =
    text === undefined
      ? Array.isArray(saved)
        ? saved.map(String)
        : []
      : text
          .split(/[\s,]+/)
          .map((e) => e.trim())
          .filter(Boolean);
  if (text !== undefined && entries.length === 0) {
    throw refuse("--owner needs the ids of the channel's owners, or none to name nobody");
  }
  const owners = [...new Set(entries.map((e) => platform.parseId(e)))];
  const outside = owners.filter((id) => !allowlist.includes(id));
  if (outside.length > 0) {
    throw refuse(
      `${outside.join(", ")} ${outside.length === 1 ? "is" : "are"} not on the allowlist: an owner must be allowed to talk to the bot too (add ${outside.length === 1 ? "it" : "them"} to --allow, or give --owner again)`,
    );
  }
  return owners;
}

/** Sets Telegram's webhook: its URL, the secret Telegram must send back, messages and button presses. */
export async function setTelegramWebhook(
  apiRoot: string,
  token: string,
  url: string,
  secret: string,
): Promise<void> {
  await telegram(apiRoot, token, "setWebhook", {
    url,
    secret_token: secret,
    allowed_updates: ["message", "callback_query"],
  });
}

/** Deletes Telegram's webhook (Telegram then keeps updates for getUpdates, which nothing calls). */
export async function deleteTelegramWebhook(apiRoot: string, token: string): Promise<void> {
  await telegram(apiRoot, token, "deleteWebhook", {});
}

/** The Discord application the token's bot belongs to: its id and its interactions public key. */
export async function discordApplication(
  apiRoot: string,
  token: string,
): Promise<{ id: string; verifyKey: string }> {
  const app = (await discord(apiRoot, token, "GET", "/applications/@me")) as {
    id?: unknown;
    verify_key?: unknown;
  };
  return { id: String(app.id), verifyKey: String(app.verify_key) };
}

async function telegram(apiRoot: string, token: string, method: string, payload: object): Promise<unknown> {
  const { status, body } = await request("Telegram", apiRoot, `${apiRoot}/bot${token}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  const answer = (body ?? {}) as { ok?: boolean; result?: unknown; description?: string };
  if (answer.ok === true) return answer.result;
  const why = answer.description ?? `HTTP ${status}`;
  if (status === 401 || status === 404) {
    throw refuse(`Telegram refused the bot token (${method}: ${why}); check it with @BotFather (/token)`);
  }
  if (status === 400) throw refuse(`Telegram refused ${method}: ${why}`);
  throw new SparError("PROVIDER_ERROR", `Telegram's ${method} failed: ${why}`);
}

async function discord(apiRoot: string, token: string, method: string, route: string): Promise<unknown> {
  const { status, body } = await request("Discord", apiRoot, `${apiRoot}/api/v10${route}`, {
    method,
    headers: { authorization: `Bot ${token}` },
  });
  if (status >= 200 && status < 300) return body;
  const why = (body as { message?: string } | undefined)?.message ?? `HTTP ${status}`;
  if (status === 401) {
    throw refuse(
      `Discord refused the bot token (${why}); reset it in the Developer Portal (Bot → Reset Token)`,
    );
  }
  throw new SparError("PROVIDER_ERROR", `Discord's ${method} ${route} failed: ${why}`);
}

/** One call to a platform; a network failure names the platform and its API root, never the URL called. */
async function request(
  title: string,
  apiRoot: string,
  url: string,
  init: RequestInit,
): Promise<{ status: number; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why =
      e.name === "TimeoutError" ? "no answer within 20 s" : (e.cause?.code ?? e.cause?.message ?? e.message);
    throw new SparError("PROVIDER_ERROR", `could not reach ${title} at ${apiRoot}: ${why}`);
  }
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: response.status, body: undefined };
  }
}
