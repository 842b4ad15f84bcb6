// A process's live JavaScript heap, read through its inspector (the Chrome DevTools Protocol): the
// process runs with `--inspect=127.0.0.1:0` (a free loopback port, nothing else changed) and prints
// the address to stderr. Used where RSS alone cannot tell a leak from V8 sizing its heap: the soak
// test (test/faults/soak.test.ts) and the RSS part of the bench (bench/parts/soak.mjs).
import { WebSocket } from "ws";

/**
 * Connects to the inspector whose address `output` (the process's printed output so far) holds.
 * `heap()` asks for a full garbage collection, then the heap's used and committed size in bytes;
 * `usage()` reads `process.memoryUsage()` in the process.
 * @param {string} output
 * @returns {Promise<{ heap(): Promise<{ usedSize: number, totalSize: number }>, usage(): Promise<{ rss: number, heapUsed: number, external: number, arrayBuffers: number }>, close(): void }>}
 */
export async function connectInspector(output) {
  const url = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/.exec(output)?.[1];
  if (url === undefined) throw new Error(`no inspector address in the output:\n${output}`);
  const ws = new WebSocket(url);
  await new Promise((done, fail) => {
    ws.once("open", () => done(undefined));
    ws.once("error", fail);
  });
  /** @type {Map<number, (result: unknown) => void>} */
  const waiting = new Map();
  ws.on("message", (/** @type {Buffer} */ data) => {
    const reply = JSON.parse(data.toString());
    if (reply.id !== undefined) waiting.get(reply.id)?.(reply.result);
  });
  let next = 0;
  const send = (/** @type {string} */ method, /** @type {object} */ params = {}) =>
    new Promise((done) => {
      const id = ++next;
      waiting.set(id, (result) => {
        waiting.delete(id);
        done(result);
      });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    async heap() {
      await send("HeapProfiler.collectGarbage");
      return /** @type {{ usedSize: number, totalSize: number }} */ (await send("Runtime.getHeapUsage"));
    },
    /** The process's `process.memoryUsage()`: `external` and `arrayBuffers` are memory V8 does not hold. */
    async usage() {
      const reply = /** @type {{ result: { value: string } }} */ (
        await send("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())" })
      );
      return /** @type {{ rss: number, heapUsed: number, external: number, arrayBuffers: number }} */ (
        JSON.parse(reply.result.value)
      );
    },
    close: () => ws.close(),
  };
}
