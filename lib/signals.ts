/**
 * One signal that aborts when any of `signals` does, with that one's reason. Not AbortSignal.any:
 * Node keeps a signal made by `any` alive for as long as it has an abort listener and has not fired,
 * so one handed to an SDK that never removes its listener (the openai SDK's fetch does not) is never
 * collected, with everything its listeners hold: about 2 KB a model call. This one is a plain
 * AbortController's signal, collected with whoever holds it. `unlink()` takes its listeners off the
 * sources again, for sources that outlive it.
 */
export function anySignal(signals: readonly AbortSignal[]): { signal: AbortSignal; unlink(): void } {
  const controller = new AbortController();
  const fired = signals.find((s) => s.aborted);
  if (fired) {
    controller.abort(fired.reason);
    return { signal: controller.signal, unlink: () => undefined };
  }
  const listeners = signals.map((source) => {
    const follow = () => controller.abort(source.reason);
    source.addEventListener("abort", follow, { once: true });
    return () => source.removeEventListener("abort", follow);
  });
  const unlink = () => {
    for (const remove of listeners) remove();
  };
  controller.signal.addEventListener("abort", unlink, { once: true });
  return { signal: controller.signal, unlink };
}

/** Resolves after `ms`, or as soon as `signal` fires (without rejecting: the caller checks why). */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      done();
    }
    signal.addEventListener("abort", finish);
  });
}
