/**
 * Approve / Deny buttons in a chat (README "Approvals"), the parts every platform shares: the
 * prompt's text (shortened, anything that looks like a secret masked), the buttons' payload
 * (`spar:a:<request id>` / `spar:d:<request id>`, within Telegram's 64 bytes of `callback_data`),
 * the line that replaces the buttons once the request ends, and the desk: who may press (the
 * channel's owners; with no owners configured, its allowlist), the refusal of anyone else (a toast
 * and an `approval.refused` log line), and the hand-off of an allowed press to the approvals plugin.
 */
import type {
  ApprovalAnswerer,
  ApprovalPress,
  ApprovalPressOutcome,
  ApprovalPrompt,
  Logger,
  TaintSource,
} from "../../sdk/index.js";

/** The longest subject (the command line, the path …) a prompt quotes. */
export const PROMPT_SUBJECT_MAX = 300;
/** The longest `why` a prompt quotes. */
const WHY_MAX = 400;
/** The longest taint line a prompt quotes. */
const TAINT_MAX = 300;
/** Telegram's limit on `callback_data`, in bytes (Slack's `value` and Discord's `custom_id` allow more). */
export const CALLBACK_DATA_MAX = 64;

const PREFIX = "spar:";

/** A name that says its value is a credential (`DB_PASSWORD`, `api-key`, `token` …). */
const SECRET_NAME =
  "[A-Za-z0-9_-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|auth|credential)[A-Za-z0-9_-]*";
/** The value after it: quoted, or up to the next space or quote. */
const SECRET_VALUE = `("[^"]*"|'[^']*'|[^\\s"']+)`;

/** Cuts `text` to `max` characters (whole code points), with an ellipsis when it was longer. */
export function shorten(text: string, max: number): string {
  const points = [...text];
  return points.length <= max ? text : `${points.slice(0, Math.max(0, max - 1)).join("")}…`;
}

/**
 * `text` with whatever looks like a credential replaced by `***`: `password=…`, `token: …`,
 * `Authorization: Bearer …`, a URL's user:password, and the shapes of well-known keys (OpenAI /
 * Anthropic `sk-…`, Slack `xox?-…`, GitHub `ghp_…`, a Telegram bot token, AWS access key ids). A
 * prompt in a chat is read by people on their phones: it shows what the call does, not its secrets.
 */
export function maskSecrets(text: string): string {
  return text
    .replace(/(\b[a-z]+:\/\/)[^\s/@:]+:[^\s/@]+@/gi, "$1***@")
    .replace(/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, "$1 ***")
    .replace(new RegExp(`\\b(${SECRET_NAME})("?\\s*[=:]\\s*)${SECRET_VALUE}`, "gi"), "$1$2***")
    .replace(new RegExp(`(--?${SECRET_NAME})(\\s+)${SECRET_VALUE}`, "gi"), "$1$2***")
    .replace(/\bsk-[A-Za-z0-9_-]{16,}/g, "***")
    .replace(/\bxox[abposr]-[A-Za-z0-9-]{8,}/g, "***")
    .replace(/\bgh[pousr]_[A-Za-z0-9]{20,}/g, "***")
    .replace(/\b\d{6,12}:[A-Za-z0-9_-]{30,}/g, "***")
    .replace(/\bAKIA[A-Z0-9]{16}\b/g, "***");
}

/** A request as the approvals plugin holds it: what a prompt is made from. */
export interface PromptSource {
  id: string;
  fighter: string;
  move: string;
  subject: string;
  why: string;
  taint?: readonly TaintSource[];
  expires_at: string;
}

/** The prompt a chat is shown for `request`: shortened, secrets masked. */
export function approvalPrompt(request: PromptSource): ApprovalPrompt {
  const taint = request.taint?.length
    ? request.taint.map((t) => `${t.kind} ${t.detail}`).join(", ")
    : undefined;
  return {
    request_id: request.id,
    fighter: shorten(request.fighter, 64),
    move: shorten(request.move, 128),
    subject: shorten(maskSecrets(request.subject.replace(/\s+/g, " ").trim()), PROMPT_SUBJECT_MAX),
    why: shorten(maskSecrets(request.why), WHY_MAX),
    ...(taint ? { taint: shorten(maskSecrets(taint), TAINT_MAX) } : {}),
    expires_at: request.expires_at,
  };
}

/** `2025-01-02T03:04:05.000Z` as `2025-01-02 03:04 UTC`. */
function when(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** The prompt as plain text (no markup: a subject may hold anything), at most `limit` characters. */
export function approvalText(prompt: ApprovalPrompt, limit: number): string {
  const lines = [
    `Approval needed: ${prompt.fighter} wants to run ${prompt.move}`,
    prompt.subject,
    `Why: ${prompt.why}`,
    ...(prompt.taint ? [`Read before asking: ${prompt.taint}`] : []),
    `Expires: ${when(prompt.expires_at)} (then it is denied)`,
    `Request: ${prompt.request_id}`,
  ];
  return shorten(lines.join("\n"), limit);
}

/** A prompt's message `text` (as posted, or as a press brings it back), then how it ended, within `limit`. */
export function withOutcome(text: string, outcome: string, limit: number): string {
  const tail = `\n\n${outcome}`;
  return `${shorten(text, Math.max(0, limit - tail.length))}${tail}`;
}

/** A finished prompt: its text, then how the request ended, within `limit`. */
export function endedText(prompt: ApprovalPrompt, outcome: string, limit: number): string {
  return withOutcome(approvalText(prompt, limit), outcome, limit);
}

/** How a request ended, for the line that replaces its buttons. */
export function outcomeLine(status: string, by?: string): string {
  const who = by ? ` by ${by}` : "";
  switch (status) {
    case "approved":
      return `Approved${who}.`;
    case "denied":
      return `Denied${who}.`;
    case "expired":
      return "Expired: not answered in time, so denied.";
    case "cancelled":
      return "Cancelled: the turn ended before an answer.";
    default:
      return `Ended: ${status}.`;
  }
}

/** The payload of a button: `spar:a:<id>` (approve) or `spar:d:<id>` (deny); at most 64 bytes. */
export function approvalAction(approve: boolean, requestId: string): string {
  const data = `${PREFIX}${approve ? "a" : "d"}:${requestId}`;
  if (!/^[A-Za-z0-9:-]+$/.test(requestId) || Buffer.byteLength(data) > CALLBACK_DATA_MAX) {
    throw new Error(`an approval request id must be short and plain to fit a button: ${requestId}`);
  }
  return data;
}

/** A button's payload read back; undefined when it is not one of ours. */
export function readApprovalAction(data: unknown): { approve: boolean; request_id: string } | undefined {
  if (typeof data !== "string") return undefined;
  const match = /^spar:([ad]):([A-Za-z0-9:-]{1,57})$/.exec(data);
  if (!match?.[1] || !match[2]) return undefined;
  return { approve: match[1] === "a", request_id: match[2] };
}

/** A channel's approvals desk (`createApprovalDesk`): who may press, and where presses go. */
export interface ApprovalDesk {
  /** Installs the approvals plugin's answerer (`ChannelApprovals.answerWith`). */
  answerWith(answer: ApprovalAnswerer): void;
  /** Whether `sender` may answer from this channel. */
  mayAnswer(sender: string): boolean;
  /** A press: refused (logged) unless the sender may answer, else answered; never throws. */
  press(press: Omit<ApprovalPress, "platform">): Promise<ApprovalPressOutcome>;
}

/** What a stranger's press is told. */
export const NOT_ALLOWED = "Not allowed: only this channel's owners can answer approvals.";

/**
 * The desk of the channel `platform`: presses from `owners` are answered; when the channel has no
 * owners, from its `allowlist` (an allowlist says who may talk to the fighter; owners, who speaks for
 * the operator, and approving a call is the operator's to do).
 *
 * @example
 * const desk = createApprovalDesk({ platform: "telegram", owners: ["42"], allowlist: ["42", "7"], log });
 * const outcome = await desk.press({ request_id, approve: true, chat: "42", sender: "42" });
 */
export function createApprovalDesk(options: {
  platform: string;
  owners: readonly string[];
  allowlist: readonly string[];
  log: Logger;
}): ApprovalDesk {
  const { platform, log } = options;
  const answerers = new Set(options.owners.length > 0 ? options.owners : options.allowlist);
  let answer: ApprovalAnswerer | undefined;
  return {
    answerWith(next) {
      answer = next;
    },
    mayAnswer: (sender) => answerers.has(sender),
    async press(press) {
      if (!answerers.has(press.sender)) {
        log.warn("approval.refused: a press from someone who may not answer", {
          platform,
          sender: press.sender,
          request: press.request_id,
        });
        return { result: "refused", text: NOT_ALLOWED };
      }
      if (!answer) {
        return { result: "not_found", text: "Approvals cannot be answered from here (they are off)." };
      }
      try {
        return await answer({ ...press, platform });
      } catch (err) {
        log.error("approvals: a press could not be answered", {
          platform,
          request: press.request_id,
          error: String(err),
        });
        return {
          result: "not_found",
          text: "Could not answer it just now: try again, or use spar approvals.",
        };
      }
    },
  };
}
