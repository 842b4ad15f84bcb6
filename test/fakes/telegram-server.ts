// A stand-in for the Telegram Bot API on 127.0.0.1, speaking its wire protocol as grammy uses it:
// `POST /bot<token>/<method>` with a JSON body, answered `{ok: true, result}` or
// `{ok: false, error_code, description}` (401 "Unauthorized" for any other token). Point grammy (or
// `[channels.telegram] api_root`) at `fake.url`. It behaves like a self-hosted Bot API server
// (`--local`), which accepts plain-http webhook URLs on any port, so a test's webhook listener on
// 127.0.0.1 can be registered. Chat ids are taken as given: tests may name chats with letters.
//
// Methods: getMe, setWebhook (records url, secret_token, allowed_updates), deleteWebhook,
// getWebhookInfo, sendMessage (records chat_id, text and reply_markup; refuses empty text and text
// over 4,096 characters, and callback_data over 64 bytes, as Telegram does), sendChatAction
// (counted), answerCallbackQuery (recorded), editMessageText (edits a sent message's text and
// keyboard). `deliver(update)` then plays Telegram's
// side of the webhook: it POSTs the Update to the registered URL with the
// `X-Telegram-Bot-Api-Secret-Token` header and returns the HTTP status.
//
//   const telegram = await startFakeTelegram();
//   const api = new Api(telegram.token, { apiRoot: telegram.url });
//   await api.setWebhook("http://127.0.0.1:6661/telegram", { secret_token: "s3cret-s3cret-s3cret" });
//   await telegram.deliver(textUpdate({ update_id: 1, from: 42, chat: 42, text: "hi" })); // → 200
import { sendJson, startFakeHttp } from "./http-fake.js";

/** The bot getMe describes. */
export const FAKE_BOT = { id: 7000000001, is_bot: true, first_name: "Spar Test", username: "spar_test_bot" };

/** Telegram's longest message text. */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** The webhook as the last setWebhook left it. */
export interface FakeWebhook {
  url: string;
  secret_token?: string;
  allowed_updates?: string[];
}

/** A message the bot sent (sendMessage). */
export interface SentMessage {
  message_id: number;
  /** The chat id as the bot gave it, as a string. */
  chat_id: string;
  text: string;
  /** The inline keyboard, as sent (or as editMessageText left it). */
  reply_markup?: { inline_keyboard?: { text: string; callback_data?: string }[][] };
}

/** An answerCallbackQuery call: the toast a presser saw. */
export interface CallbackAnswer {
  callback_query_id: string;
  text?: string;
}

/** One Bot API call the fake answered (successful or not, the right token or not). */
export interface ApiCall {
  method: string;
  payload: Record<string, unknown>;
  /** Whether it was made with the fake's token. */
  authorized: boolean;
}

export interface FakeTelegram {
  /** The API root: `http://127.0.0.1:<port>` (grammy's `apiRoot`, config's `api_root`). */
  readonly url: string;
  /** The only token the fake accepts. */
  readonly token: string;
  /** Every call, in order (`calls.filter(c => c.method === "setWebhook")` counts registrations). */
  readonly calls: ApiCall[];
  /** The registered webhook; undefined before setWebhook and after deleteWebhook. */
  webhook(): FakeWebhook | undefined;
  /** Messages sent, in order (as edited since). */
  sent(): SentMessage[];
  /** answerCallbackQuery calls, in order. */
  callbackAnswers(): CallbackAnswer[];
  /** How many sendChatAction calls succeeded. */
  chatActions(): number;
  /**
   * POSTs `update` to the registered webhook as Telegram does, with the secret header set to the
   * registered `secret_token` (or `options.secret`; `null` sends no header). Returns the HTTP
   * status. Throws when no webhook is registered.
   */
  deliver(update: object, options?: { secret?: string | null }): Promise<number>;
  close(): Promise<void>;
}

/** A text-message Update as Telegram sends it (private chats have the user's id as chat id). */
export function textUpdate(options: {
  update_id: number;
  from: number | string;
  chat: number | string;
  text: string;
}): object {
  const chatType = options.chat === options.from ? "private" : "supergroup";
  return {
    update_id: options.update_id,
    message: {
      message_id: options.update_id,
      date: Math.floor(Date.now() / 1000),
      from: { id: options.from, is_bot: false, first_name: "Tester", language_code: "en" },
      chat:
        chatType === "private"
          ? { id: options.chat, type: "private", first_name: "Tester" }
          : { id: options.chat, type: chatType, title: "Test chat" },
      text: options.text,
    },
  };
}

/** A press of an inline button (`callback_data`) on the bot's message, as Telegram sends it. */
export function pressUpdate(options: {
  update_id: number;
  from: number | string;
  message: SentMessage;
  data: string;
}): object {
  const chat = /^-?\d+$/.test(options.message.chat_id)
    ? Number(options.message.chat_id)
    : options.message.chat_id;
  return {
    update_id: options.update_id,
    callback_query: {
      id: `cb${options.update_id}`,
      from: { id: options.from, is_bot: false, first_name: "Presser", language_code: "en" },
      message: {
        message_id: options.message.message_id,
        date: Math.floor(Date.now() / 1000),
        from: FAKE_BOT,
        chat: { id: chat, type: "private" },
        text: options.message.text,
        ...(options.message.reply_markup ? { reply_markup: options.message.reply_markup } : {}),
      },
      chat_instance: "4242",
      data: options.data,
    },
  };
}

/** The keyboard of a message, checked as Telegram checks it (callback_data 1 to 64 bytes). */
function keyboard(value: unknown): SentMessage["reply_markup"] {
  if (value === undefined) return undefined;
  const markup = (typeof value === "string" ? JSON.parse(value) : value) as SentMessage["reply_markup"];
  for (const row of markup?.inline_keyboard ?? []) {
    for (const button of row) {
      const data = button.callback_data;
      if (data !== undefined && (Buffer.byteLength(data) < 1 || Buffer.byteLength(data) > 64)) {
        throw badRequest("BUTTON_DATA_INVALID");
      }
    }
  }
  return markup;
}

const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);

class BotApiError extends Error {
  constructor(
    readonly error_code: number,
    readonly description: string,
  ) {
    super(description);
  }
}

const badRequest = (what: string) => new BotApiError(400, `Bad Request: ${what}`);

/** A chat id as Telegram takes it: an integer, or a string (numeric, `@channel`, or a test's name). */
function chatId(payload: Record<string, unknown>): string {
  const id = payload.chat_id;
  if ((typeof id === "number" && Number.isSafeInteger(id)) || (typeof id === "string" && id !== ""))
    return String(id);
  throw badRequest("chat_id is empty");
}

export async function startFakeTelegram(options: { token?: string } = {}): Promise<FakeTelegram> {
  const token = options.token ?? "7000000001:AAFakeTokenForTestsOnly_0123456789abc";
  const calls: ApiCall[] = [];
  const sent: SentMessage[] = [];
  const answers: CallbackAnswer[] = [];
  let hook: FakeWebhook | undefined;
  let actions = 0;
  let nextMessageId = 1;

  const methods: Record<string, (payload: Record<string, unknown>) => unknown> = {
    getMe: () => ({
      ...FAKE_BOT,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    }),
    setWebhook(payload) {
      const url = payload.url;
      if (typeof url !== "string") throw badRequest("bad webhook: URL is empty");
      if (url === "") {
        hook = undefined;
        return true;
      }
      if (!/^https?:\/\/[^\s/]+/.test(url))
        throw badRequest("bad webhook: Failed to resolve host: Name or service not known");
      const secret = payload.secret_token;
      if (secret !== undefined && (typeof secret !== "string" || !/^[A-Za-z0-9_-]{1,256}$/.test(secret))) {
        throw badRequest("secret token contains unallowed characters");
      }
      const allowed = payload.allowed_updates;
      hook = {
        url,
        ...(typeof secret === "string" ? { secret_token: secret } : {}),
        ...(Array.isArray(allowed) ? { allowed_updates: allowed.map(String) } : {}),
      };
      return true;
    },
    deleteWebhook() {
      hook = undefined;
      return true;
    },
    getWebhookInfo: () => ({
      url: hook?.url ?? "",
      has_custom_certificate: false,
      pending_update_count: 0,
      ...(hook?.allowed_updates ? { allowed_updates: hook.allowed_updates } : {}),
    }),
    sendMessage(payload) {
      const chat_id = chatId(payload);
      const text = payload.text;
      if (typeof text !== "string" || text.trim() === "") throw badRequest("message text is empty");
      if (text.length > TELEGRAM_TEXT_LIMIT) throw badRequest("message is too long");
      const markup = keyboard(payload.reply_markup);
      const message_id = nextMessageId++;
      sent.push({ message_id, chat_id, text, ...(markup ? { reply_markup: markup } : {}) });
      const id = /^-?\d+$/.test(chat_id) ? Number(chat_id) : chat_id;
      return {
        message_id,
        date: Math.floor(Date.now() / 1000),
        from: FAKE_BOT,
        chat: { id, type: "private" },
        text,
      };
    },
    answerCallbackQuery(payload) {
      if (typeof payload.callback_query_id !== "string")
        throw badRequest("query is too old or query ID is invalid");
      answers.push({
        callback_query_id: payload.callback_query_id,
        ...(typeof payload.text === "string" ? { text: payload.text } : {}),
      });
      return true;
    },
    editMessageText(payload) {
      const chat_id = chatId(payload);
      const message = sent.find((m) => m.chat_id === chat_id && m.message_id === payload.message_id);
      if (!message) throw badRequest("message to edit not found");
      const text = payload.text;
      if (typeof text !== "string" || text.trim() === "") throw badRequest("message text is empty");
      if (text.length > TELEGRAM_TEXT_LIMIT) throw badRequest("MESSAGE_TOO_LONG");
      const markup = keyboard(payload.reply_markup);
      message.text = text;
      if (markup?.inline_keyboard?.length) message.reply_markup = markup;
      else delete message.reply_markup;
      return {
        message_id: message.message_id,
        date: Math.floor(Date.now() / 1000),
        chat: { id: chat_id, type: "private" },
        text,
      };
    },
    sendChatAction(payload) {
      chatId(payload);
      if (typeof payload.action !== "string" || !CHAT_ACTIONS.has(payload.action)) {
        throw badRequest("wrong parameter action in request");
      }
      actions += 1;
      return true;
    },
  };

  const http = await startFakeHttp(async (req, res, body) => {
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec((req.url ?? "").split("?")[0] ?? "");
    if (!match || req.method !== "POST") {
      return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    }
    const [, given = "", method = ""] = match;
    let payload: Record<string, unknown> = {};
    if (body.trim() !== "") {
      try {
        payload = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: invalid JSON" });
      }
    }
    const authorized = given === token;
    calls.push({ method, payload, authorized });
    if (!authorized) return sendJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    const run = methods[method];
    if (!run)
      return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found: method not found" });
    try {
      sendJson(res, 200, { ok: true, result: run(payload) });
    } catch (err) {
      if (!(err instanceof BotApiError)) throw err;
      sendJson(res, err.error_code, { ok: false, error_code: err.error_code, description: err.description });
    }
  });

  return {
    url: `http://127.0.0.1:${http.port}`,
    token,
    calls,
    webhook: () => (hook ? { ...hook } : undefined),
    sent: () => sent.map((m) => ({ ...m })),
    callbackAnswers: () => [...answers],
    chatActions: () => actions,
    async deliver(update, deliverOptions = {}) {
      if (!hook) throw new Error("no webhook is registered (setWebhook was not called)");
      const secret = deliverOptions.secret === undefined ? hook.secret_token : deliverOptions.secret;
      const response = await fetch(hook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(secret === null || secret === undefined ? {} : { "X-Telegram-Bot-Api-Secret-Token": secret }),
        },
        body: JSON.stringify(update),
      });
      await response.arrayBuffer();
      return response.status;
    },
    close: () => http.close(),
  };
}
