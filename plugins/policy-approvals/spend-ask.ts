/**
 * A budget's overrun, asked (issue 31: `on_exceed = "ask"`; the `spend.ask` tap): a request like a
 * move's (`move` = `model_call`, no arguments, no files), answered through the same routes, CLI and
 * chat buttons, and waited for the same way (waiting.ts). The wait is not durable: it happens inside
 * the model call, before anything of it is stored, so a daemon that stops meanwhile ends the turn as
 * any running turn ends (cancelled; INTERRUPTED after kill -9), and the request is left to expire.
 * An unattended turn (a gorilla's, a schedule's) has no one to ask: refused at once, recorded denied.
 */
import { randomUUID } from "node:crypto";
import type { EventBus, Logger, SpendAnswer, SpendQuestion } from "../../sdk/index.js";
import type { ChatPrompts } from "./chat.js";
import { type ApprovalSettings, unattended } from "./policy.js";
import type { ApprovalRequest, Records } from "./records.js";
import { waitForAnswer } from "./waiting.js";

/** The pseudo-move a budget's request names: a model call, past its budget. */
export const MODEL_CALL = "model_call";

export function createSpendAsk(deps: {
  settings: ApprovalSettings;
  records: Records;
  events: EventBus;
  log: Logger;
  chat?: Pick<ChatPrompts, "ask" | "ended">;
  announce(request: ApprovalRequest): void;
}) {
  const { records, events, log } = deps;
  return async function ask(question: SpendQuestion): Promise<SpendAnswer | undefined> {
    // Approvals off: no one is asked anything, and an overrun is refused rather than waved through.
    if (deps.settings.mode === "off") return undefined;
    const fields = {
      fighter_id: question.fighter.id,
      fighter: question.fighter.name,
      bout_id: question.bout_id,
      turn_id: question.turn_id,
      call_id: `budget:${randomUUID()}`,
      origin: question.origin,
      move: MODEL_CALL,
      arguments: {},
      subject: question.subject,
      cwd: "",
      files: [],
      why: question.why,
    };
    // A troop task's step has no one to ask either: its caller waits for the task, not for approvals.
    if (unattended(question.origin) || question.origin.startsWith("troop-task:")) {
      await records.refused(fields, `no one to ask in a ${question.origin} turn`);
      return "denied";
    }
    const request = await records.create(fields, deps.settings.timeout_s);
    events.publish({
      kind: "approval.requested",
      request_id: request.id,
      fighter_id: request.fighter_id,
      fighter: request.fighter,
      bout_id: request.bout_id,
      turn_id: request.turn_id,
      move: MODEL_CALL,
      expires_at: request.expires_at,
      tainted: false,
    });
    log.info("approvals: a budget's overrun waits for an answer", {
      request: request.id,
      fighter: request.fighter,
    });
    question.onApproval?.({
      id: request.id,
      move: MODEL_CALL,
      subject: request.subject,
      expires_at: request.expires_at,
    });
    deps.chat?.ask(request);
    const waited = await waitForAnswer(request, question.signal, deps);
    deps.chat?.ended(waited.request);
    if (waited.settled) deps.announce(waited.request);
    const status = waited.request.status;
    return status === "pending" ? "cancelled" : status;
  };
}
