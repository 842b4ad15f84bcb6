/**
 * Approve / Deny buttons in the chat a waiting turn came from (issue 30, part D). A request whose
 * turn's origin is `channel:<platform>:<chat>` is posted to that chat through the platform's
 * adapter (`ChannelAdapter.approvals`, reached with the Ring's `channels` group); a press comes back
 * through the answerer this file hands every configured channel when the daemon is ready, and is
 * answered by the same transaction as the API (`records.answer`), `answered_by`
 * `channel:<platform>:<sender id>`. The channel has already checked who pressed (its owners; with
 * none, its allowlist); here the request must also be one from that very chat. A request that ends
 * some other way (the API, expiry, a cancel) has its message edited by the turn that waited on it.
 *
 * What was posted is kept in memory, by the node whose turn waits: a restarted daemon leaves the
 * old message's buttons in place, and a press on them is answered (or told "already …") and then
 * edits the message itself.
 */
import {
  type ApprovalPress,
  type ApprovalPressOutcome,
  type ApprovalPrompt,
  type EventBus,
  isSparError,
  type Logger,
  type RingServices,
} from "../../sdk/index.js";
import { approvalPrompt, outcomeLine } from "../../sdk/kits/channels.js";
import type { ApprovalRequest, Records } from "./records.js";

/** A prompt posted to a chat. */
interface Posted {
  platform: string;
  chat: string;
  messageId: string;
  prompt: ApprovalPrompt;
}

/** The platform and chat of a channel origin (`channel:<platform>:<chat>`); undefined for any other. */
export function originChat(origin: string): { platform: string; chat: string } | undefined {
  const match = /^channel:([a-z][a-z0-9-]*):(.+)$/.exec(origin);
  return match?.[1] && match[2] ? { platform: match[1], chat: match[2] } : undefined;
}

export function createChatPrompts(deps: {
  ring: Pick<RingServices, "channels">;
  records: Records;
  events: EventBus;
  log: Logger;
}) {
  const { ring, records, events, log } = deps;
  const posted = new Map<string, Promise<Posted | undefined>>();

  const announce = (request: ApprovalRequest) =>
    events.publish({
      kind: "approval.answered",
      request_id: request.id,
      fighter_id: request.fighter_id,
      status: request.status,
      answered_by: request.answered_by ?? "",
    });

  async function approvalsOf(platform: string) {
    return (await ring.channels.resolve(platform))?.approvals;
  }

  /** Posts `request` to the chat its turn came from, when it came from one (never throws, never waits). */
  function ask(request: ApprovalRequest): void {
    const where = originChat(request.origin);
    if (!where) return;
    const work = (async (): Promise<Posted | undefined> => {
      const approvals = await approvalsOf(where.platform);
      if (!approvals) return undefined;
      const prompt = approvalPrompt(request);
      const messageId = await approvals.ask(where.chat, prompt);
      log.info("approvals: asked in the chat the turn came from", {
        request: request.id,
        platform: where.platform,
      });
      return { ...where, messageId, prompt };
    })().catch((err: unknown) => {
      log.warn("approvals: the chat prompt was not posted", {
        request: request.id,
        platform: where.platform,
        error: String(err),
      });
      return undefined;
    });
    posted.set(request.id, work);
  }

  /** The request ended: its chat message (if any) says how, unless a press there already said so. */
  function ended(request: ApprovalRequest): void {
    const work = posted.get(request.id);
    if (!work || request.status === "pending") return;
    posted.delete(request.id);
    if (request.answered_by?.startsWith("channel:")) return;
    void work
      .then(async (message) => {
        if (!message) return;
        const approvals = await approvalsOf(message.platform);
        await approvals?.ended(
          message.chat,
          message.messageId,
          message.prompt,
          outcomeLine(request.status, request.answered_by),
        );
      })
      .catch((err: unknown) =>
        log.warn("approvals: the chat prompt was not updated", { request: request.id, error: String(err) }),
      );
  }

  /** A press from a sender the channel allowed: answers the request, once, if it came from that chat. */
  async function answerPress(press: ApprovalPress): Promise<ApprovalPressOutcome> {
    const request = await records.read(press.request_id);
    if (!request || request.origin !== `channel:${press.platform}:${press.chat}`) {
      return { result: "not_found", text: "There is no such approval request in this chat." };
    }
    const by = `channel:${press.platform}:${press.sender}`;
    try {
      const { request: answered } = await records.answer(
        request.id,
        press.approve
          ? { approve: true, by }
          : { approve: false, reason: `denied from ${press.platform}`, by },
        announce,
      );
      announce(answered);
      log.info("approvals: answered from a chat", {
        request: request.id,
        status: answered.status,
        by,
      });
      return {
        result: "answered",
        status: answered.status,
        text: press.approve ? "Approved: it runs now." : "Denied: it will not run.",
        outcome: outcomeLine(answered.status, by),
      };
    } catch (err) {
      if (!isSparError(err, "CONFLICT") && !isSparError(err, "APPROVAL_EXPIRED")) throw err;
      const now = await records.get(request.id);
      return {
        result: "already",
        status: now.status,
        text: `Already ${now.status}: nothing changed.`,
        outcome: outcomeLine(now.status, now.answered_by),
      };
    }
  }

  /** Hands every configured channel with buttons the answerer (when the daemon is ready). */
  async function attach(): Promise<void> {
    for (const platform of ring.channels.configured()) {
      try {
        (await approvalsOf(platform))?.answerWith(answerPress);
      } catch (err) {
        log.warn("approvals: a channel's buttons were not connected", { platform, error: String(err) });
      }
    }
  }

  return { ask, ended, answerPress, attach };
}

export type ChatPrompts = ReturnType<typeof createChatPrompts>;
