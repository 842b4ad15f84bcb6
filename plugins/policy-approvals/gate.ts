/**
 * The approvals gate, in `move.beforeCall` (after the kernel's capability check and every other
 * plugin's refusals: a call refused anyway is never asked about) and `move.afterCall` (what the
 * policy remembers: the chats a fighter posted to, the hosts a turn fetched).
 */
import {
  cancelledError,
  canonicalJson,
  type EventBus,
  type Logger,
  type MoveCallInfo,
  type MoveOutcome,
  type MoveRefusal,
  type RingServices,
} from "../../sdk/index.js";
import type { ChatPrompts } from "./chat.js";
import { boundFiles, changedSince, fileTarget, notifyTarget, shellFolder, subjectOf } from "./facts.js";
import { type ApprovalSettings, type CallFacts, decide, unattended } from "./policy.js";
import type { ApprovalRequest, Records } from "./records.js";
import { waitForAnswer } from "./waiting.js";

/** The most turns whose fetched hosts are remembered (a turn's are dropped with the oldest). */
const TURNS_REMEMBERED = 1000;
/** How much of a call's arguments a refusal quotes. */
const QUOTED = 300;

export interface GateDeps {
  settings: ApprovalSettings;
  /**
   * The Ring's fighters (a waiting turn is `awaiting_approval` there, and survives a stop) and moves
   * (the folders a command's sandbox is lent: a skill's script it runs is bound like a workspace file).
   */
  ring: Pick<RingServices, "fighters" | "moves">;
  records: Records;
  events: EventBus;
  log: Logger;
  /** Approve / Deny buttons in the chat a turn came from (chat.ts); none: asked through the API only. */
  chat?: Pick<ChatPrompts, "ask" | "ended">;
}

function quoted(text: string): string {
  return text.length > QUOTED ? `${text.slice(0, QUOTED)}…` : text;
}

export function createGate(deps: GateDeps) {
  const { settings, records, events, log, ring } = deps;
  /** Hosts each recent turn fetched (web_fetch), so a fetch to one seen before in the turn is not new. */
  const fetched = new Map<string, Set<string>>();

  /** The files the call binds: for a command, the skills' scripts it names under /skills/<name> too. */
  async function filesOf(move: string, info: MoveCallInfo) {
    const mounts = move === "shell_exec" ? await ring.moves.mounts(info.fighter) : [];
    return boundFiles(move, info.call.arguments, info.workspace, mounts);
  }

  async function factsOf(info: MoveCallInfo): Promise<CallFacts> {
    const move = info.call.name;
    const args = info.call.arguments;
    const facts: CallFacts = {
      move,
      fighter: { id: info.fighter.id, name: info.fighter.name },
      subject: subjectOf(move, args),
      canonical: canonicalJson(args),
      effects: info.effects,
      destructive: info.destructive,
      grants: info.grants.map((g) => g.approval),
      taint: info.taint,
    };
    if ((move === "file_write" || move === "file_edit") && typeof args.path === "string") {
      facts.file = fileTarget(info.workspace, args.path);
    }
    const target = move === "channel_notify" ? notifyTarget(args) : undefined;
    if (target) facts.notify = { target, known: await records.targets.known(info.fighter.id, target) };
    if (move === "web_fetch" && typeof args.url === "string" && URL.canParse(args.url)) {
      const url = new URL(args.url);
      facts.fetch = {
        host: url.host,
        query: url.search.length > 1,
        seen: fetched.get(info.turn_id)?.has(url.host) === true,
      };
    }
    return facts;
  }

  /** Allows the call (undefined), refuses it, or asks and waits for the answer. */
  async function beforeCall(info: MoveCallInfo): Promise<MoveRefusal | undefined> {
    // A call taken up again answers to the request it made, whatever the policy says now.
    const earlier = info.resumed ? await records.forCall(info.turn_id, info.call.id) : undefined;
    if (earlier) return resumedCall(earlier, info);
    if (settings.mode === "off") return undefined;
    const move = info.call.name;
    const facts = await factsOf(info);
    // Stored rules only ever allow: a call allowed without them needs no read of the store.
    let decision = decide(facts, settings, []);
    if (decision.action !== "allow") decision = decide(facts, settings, await records.rules.forMove(move));
    if (decision.action === "allow") return undefined;
    const call = `${move} ${quoted(facts.canonical)}`;
    if (decision.action === "deny") {
      return { code: "APPROVAL_DENIED", message: `${call} is denied: ${decision.why}` };
    }
    const fields = {
      fighter_id: info.fighter.id,
      fighter: info.fighter.name,
      bout_id: info.bout_id,
      turn_id: info.turn_id,
      call_id: info.call.id,
      origin: info.origin,
      move,
      arguments: info.call.arguments,
      subject: facts.subject,
      cwd: move === "shell_exec" ? shellFolder(info.workspace, info.call.arguments) : info.workspace,
      files: await filesOf(move, info),
      why: decision.why,
      ...(info.taint.length > 0 ? { taint: [...info.taint] } : {}),
    };
    if (unattended(info.origin)) {
      const recorded = await records.refused(fields, `no one to ask in a ${info.origin} turn`);
      log.info("approvals: an unattended turn needed an approval: refused", {
        request: recorded.id,
        fighter: info.fighter.name,
        move,
        origin: info.origin,
      });
      return {
        code: "APPROVAL_REQUIRED",
        message: `needs approval: ${call} (${decision.why}); no one can answer in a ${info.origin} turn, so it was not run: an [[approvals.rules]] rule that allows it (or spar approvals approve --always on an asked one) lets the next one run`,
      };
    }
    const request = await records.create(fields, settings.timeout_s);
    events.publish({
      kind: "approval.requested",
      request_id: request.id,
      fighter_id: request.fighter_id,
      fighter: request.fighter,
      bout_id: request.bout_id,
      turn_id: request.turn_id,
      move,
      expires_at: request.expires_at,
      tainted: info.taint.length > 0,
    });
    log.info("approvals: waiting for an answer", { request: request.id, fighter: info.fighter.name, move });
    // The turn's own caller (a streaming message) is told what waits: it asked for this call.
    info.onApproval?.({ id: request.id, move, subject: request.subject, expires_at: request.expires_at });
    // A turn a chat started asks there too, with buttons (chat.ts).
    deps.chat?.ask(request);
    return waitIn(request, info, call);
  }

  /**
   * The turn waits for the answer, `awaiting_approval` meanwhile (so a stop leaves it waiting, taken
   * up at the next start); an approved call is let through once, before the turn runs on.
   */
  function waitIn(request: ApprovalRequest, info: MoveCallInfo, call: string) {
    return ring.fighters.awaitApproval(info.turn_id, info.taint, async () => {
      const waited = await waitForAnswer(request, info.signal, deps);
      deps.chat?.ended(waited.request);
      if (waited.settled) announce(waited.request);
      if (waited.cancelled || info.signal.aborted) throw cancelledError(info.signal);
      return afterAnswer(waited.request, info, call);
    });
  }

  /** A call of a turn taken up again: its request's answer, waited for if it has none yet. */
  async function resumedCall(request: ApprovalRequest, info: MoveCallInfo): Promise<MoveRefusal | undefined> {
    const call = `${request.move} ${quoted(canonicalJson(request.arguments))}`;
    if (request.released_at || request.stale) {
      return {
        code: "APPROVAL_STALE",
        message: `${call} was let through at ${request.released_at ?? "its answer"}, just before the daemon stopped: it is not run again, and may or may not have taken effect`,
      };
    }
    if (request.status !== "pending") return afterAnswer(request, info, call);
    log.info("approvals: a turn taken up again waits for its answer", { request: request.id });
    return waitIn(request, info, call);
  }

  /** Approved: the call runs if it is still the one approved; else the answer, as a refusal. */
  async function afterAnswer(
    request: ApprovalRequest,
    info: MoveCallInfo,
    call: string,
  ): Promise<MoveRefusal | undefined> {
    switch (request.status) {
      case "approved": {
        const stale =
          canonicalJson(request.arguments) !== canonicalJson(info.call.arguments)
            ? "its arguments are not the ones approved"
            : changedSince(request.files, await filesOf(request.move, info));
        if (!(await records.released(request.id, stale))) {
          return {
            code: "APPROVAL_STALE",
            message: `${call} was let through already: it is not run twice`,
          };
        }
        if (!stale) return undefined;
        return {
          code: "APPROVAL_STALE",
          message: `${call} was approved, but ${stale}: it was not run, and must be asked again`,
        };
      }
      case "denied":
        return {
          code: "APPROVAL_DENIED",
          message: `the operator denied ${call}${request.reason ? `: ${request.reason}` : ""}; it was not run`,
        };
      case "expired":
        return {
          code: "APPROVAL_EXPIRED",
          message: `${call} was not answered within ${settings.timeout_s} s (its request ${request.id} expired): it was not run`,
        };
      default:
        return {
          code: "APPROVAL_DENIED",
          message: `${call} was not approved (${request.status}): it was not run`,
        };
    }
  }

  /** A request ended without the API answering it (expired, cancelled): clients see it go. */
  function announce(request: ApprovalRequest): void {
    events.publish({
      kind: "approval.answered",
      request_id: request.id,
      fighter_id: request.fighter_id,
      status: request.status,
      answered_by: request.answered_by ?? "",
    });
  }

  /** Remembers what later calls' policy reads: the chats a fighter posted to, the hosts a turn fetched. */
  async function afterCall(outcome: MoveOutcome, info: MoveCallInfo): Promise<MoveOutcome> {
    if (!outcome.ok) return outcome;
    const args = info.call.arguments;
    try {
      const target = info.call.name === "channel_notify" ? notifyTarget(args) : undefined;
      if (target) await records.targets.used(info.fighter.id, target);
    } catch (err) {
      log.warn("approvals: could not record a channel_notify target", { error: String(err) });
    }
    if (info.call.name === "web_fetch" && typeof args.url === "string" && URL.canParse(args.url)) {
      const hosts = fetched.get(info.turn_id) ?? new Set<string>();
      hosts.add(new URL(args.url).host);
      fetched.delete(info.turn_id);
      fetched.set(info.turn_id, hosts);
      if (fetched.size > TURNS_REMEMBERED) fetched.delete(fetched.keys().next().value as string);
    }
    return outcome;
  }

  return { beforeCall, afterCall, announce };
}
