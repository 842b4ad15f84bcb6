/**
 * Running a troop's parallel steps: async work over a list with at most `limit` items in flight and
 * the results in the list's order, whatever order they finish in. Strategies pass their task's
 * signal, so a cancelled task starts nothing more (`[troops] max_parallel` is the limit).
 */

/**
 * Runs `run` over `items`, at most `limit` at once (at least one), and resolves with the results in
 * the items' order. Once `signal` is aborted no further item starts; the slots of those never started
 * are `undefined`. When `run` throws, nothing more starts, the running ones finish, and the first
 * error is thrown.
 *
 * @example
 * const steps = await mapBounded(task.members, task.max_parallel, (m) => task.step(m.id, task.task, "answer"), task.signal);
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  run: (item: T, index: number) => Promise<R>,
  signal?: AbortSignal,
): Promise<(R | undefined)[]> {
  const results: (R | undefined)[] = items.map(() => undefined);
  const width = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failure && !signal?.aborted) {
      const index = next++;
      try {
        results[index] = await run(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  if (failure) throw failure.error;
  return results;
}
