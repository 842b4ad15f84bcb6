/**
 * Cancelling a turn: one AbortController per turn, aborted with a CANCELLED SparError that says who
 * cancelled it (its client left, POST …/cancel, a WebSocket cancel frame, its caller gave up, or the
 * daemon is stopping). Everything that waits on the turn's signal reports that same error.
 */
import { isSparError, SparError } from "./errors.js";

/** The reason a turn is aborted with. */
export function cancellation(why: string): SparError {
  return new SparError("CANCELLED", `the turn was cancelled: ${why}`);
}

/** The error for an aborted signal: its reason when that is a CANCELLED SparError. */
export function cancelledError(signal: AbortSignal): SparError {
  const reason: unknown = signal.reason;
  return isSparError(reason, "CANCELLED") ? reason : cancellation("its caller gave up");
}

export function isCancelled(err: unknown): boolean {
  return isSparError(err, "CANCELLED");
}

/**
 * An AbortController that also aborts when `parent` does (with the parent's reason). `unlink`
 * removes the listener, so a long-lived parent does not keep every child alive.
 */
export function childController(parent: AbortSignal | undefined): {
  controller: AbortController;
  unlink(): void;
} {
  const controller = new AbortController();
  if (!parent) return { controller, unlink: () => undefined };
  const follow = () =>
    controller.abort(
      isSparError(parent.reason, "CANCELLED") ? parent.reason : cancellation("its caller gave up"),
    );
  if (parent.aborted) follow();
  else parent.addEventListener("abort", follow, { once: true });
  return { controller, unlink: () => parent.removeEventListener("abort", follow) };
}

/**
 * `work`'s result, or the error `failure()` makes once `ms` have passed without one. The work is not
 * stopped: its owner only stops waiting for it (a plugin that never finishes activating, a data
 * transaction past its time).
 *
 * @example
 * await withDeadline(load(plugin), 10_000, () => new SparError("PLUGIN_FAILED", "plugin x did not activate"));
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, failure: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(failure()), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
