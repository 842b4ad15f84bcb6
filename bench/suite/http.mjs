// The benchmarks' HTTP client: node:http over keep-alive connections, lighter than fetch, so on a
// 2-core machine the client takes as little CPU from the daemon as it can. The same client times
// both the daemon and the model server alone, so their difference is the daemon's.
import { Agent, request as httpRequest } from "node:http";

const agent = new Agent({ keepAlive: true, maxSockets: 1024 });

/** One request; resolves with the status, headers and whole body (a string), never throws on status. */
export function request(url, { method = "GET", body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const req = httpRequest(
      url,
      {
        method,
        agent,
        headers: {
          ...(payload === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
          ...headers,
        },
      },
      (res) => {
        const parts = [];
        res.on("data", (d) => parts.push(d));
        res.on("end", () =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(parts).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** A request that must succeed (2xx); its body parsed as JSON when it is JSON. */
export async function ok(url, options) {
  const res = await request(url, options);
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${options?.method ?? "GET"} ${url} answered ${res.status}: ${res.body.slice(0, 300)}`);
  }
  return res.headers["content-type"]?.includes("json") ? JSON.parse(res.body) : res.body;
}

export const post = (url, body, headers) => ok(url, { method: "POST", body, headers });

/** Runs `task(i)` for i = 0 … total-1 with `concurrency` workers; returns the elapsed ms. */
export async function pool(total, concurrency, task) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      for (let i = next++; i < total; i = next++) await task(i);
    }),
  );
  return performance.now() - started;
}

/** Times `n` sequential calls of `once(i)`, in ms each. */
export async function timed(n, once) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await once(i);
    times.push(performance.now() - t);
  }
  return times;
}

/**
 * `concurrency` workers call `task(i)` (i counting up from `first`) until `ms` have passed, each
 * finishing the call it is in; returns how many calls completed, failures, and the elapsed ms.
 */
export async function forDuration(ms, concurrency, task, first = 0) {
  let next = first;
  let done = 0;
  const failures = [];
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          await task(next++);
          done += 1;
        } catch (err) {
          failures.push(err instanceof Error ? err.message : String(err));
        }
      }
    }),
  );
  return { done, failures, next, ms: performance.now() - started };
}
