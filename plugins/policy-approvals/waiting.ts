/**
 * A turn waiting for the answer to its request (in the `move.beforeCall` tap: no kernel concept of
 * its own). It ends at the first of: the answer (`approval.answered` on the bus, which reaches every
 * node of a cluster, then the record re-read; and a slow re-read of the record in case an event was
 * missed), the request's expiry (recorded `expired`), or the turn's signal (a cancel or the
 * fighter's kill: recorded `cancelled`; the daemon stopping: left `pending`, so it stays answerable
 * and a restarted daemon can take it up). The record decides: a settle that loses the race to an
 * answer returns the answer.
 */
import { type EventBus, isShutdown, type Logger } from "../../sdk/index.js";
import type { ApprovalRequest, Records } from "./records.js";

/** How often a waiting turn re-reads its request, should an `approval.answered` event not reach it. */
export const RECHECK_MS = 5000;

export interface Waited {
  request: ApprovalRequest;
  /** The turn's signal fired: the request was (or already had been) settled `cancelled`. */
  cancelled: boolean;
  /** This wait settled it (expired or cancelled), rather than an answer or another settle. */
  settled: boolean;
}

export function waitForAnswer(
  request: ApprovalRequest,
  signal: AbortSignal,
  deps: { records: Records; events: EventBus; log: Logger },
): Promise<Waited> {
  const { records, events, log } = deps;
  return new Promise((resolve) => {
    let done = false;
    const timers: NodeJS.Timeout[] = [];
    let unsubscribe = () => {};
    const finish = (waited: Waited) => {
      if (done) return;
      done = true;
      for (const timer of timers) clearTimeout(timer);
      unsubscribe();
      signal.removeEventListener("abort", onAbort);
      resolve(waited);
    };
    const reread = async () => {
      if (done) return;
      try {
        const now = await records.read(request.id);
        if (now && now.status !== "pending") finish({ request: now, cancelled: false, settled: false });
      } catch (err) {
        log.warn("approvals: could not re-read a request", { request: request.id, error: String(err) });
      }
    };
    const settle = async (status: "expired" | "cancelled", by: string) => {
      let settled: { request: ApprovalRequest; mine: boolean } | undefined;
      try {
        settled = await records.settle(request.id, status, by);
      } catch (err) {
        log.warn("approvals: could not settle a request", { request: request.id, error: String(err) });
      }
      // Settled or not, a turn that stops waiting never runs the call unless the record says approved.
      finish({
        request: settled?.request ?? { ...request, status },
        cancelled: status === "cancelled",
        settled: settled?.mine === true,
      });
    };
    const onAbort = () => {
      // The daemon is stopping: the request stays pending, answerable after the restart (README).
      if (isShutdown(signal.reason)) finish({ request, cancelled: true, settled: false });
      else void settle("cancelled", "the turn was cancelled");
    };
    unsubscribe = events.subscribe((event) => {
      if (event.kind === "approval.answered" && event.request_id === request.id) void reread();
    });
    const poll = () => {
      timers.push(
        setTimeout(() => {
          void reread().finally(() => {
            if (!done) poll();
          });
        }, RECHECK_MS),
      );
    };
    poll();
    const left = Math.max(0, Date.parse(request.expires_at) - Date.now());
    timers.push(setTimeout(() => void settle("expired", "timeout"), left));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    // An answer may have landed between the insert and the subscription.
    void reread();
  });
}
