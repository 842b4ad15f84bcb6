// Shared by the benchmarks: a minimal chat-completions responder on 127.0.0.1 that answers in SSE
// at once, the built daemon started in a temporary data dir, memory readings from /proc, a client
// pool, and the statistics every part reports (medians with their spread, percentiles).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { pool } from "./suite/http.mjs";

export const ROOT = join(import.meta.dirname, "..");
/** The CLI of this checkout; a benchmark may take another (an older build) to compare in one run. */
export const SPAR_BIN = join(ROOT, "bin", "spar.js");

/**
 * Quotas and the API's rate limit out of the way, so what is measured is the message path, not a
 * refusal. Creed reflection is off: it is an extra model call after some turns, not per-message work.
 */
export const UNLIMITED_TOML =
  "\n[quotas]\nrequests_per_minute = 100000000\ntokens_per_minute = 100000000000\n" +
  "[api]\nrate_limit_per_minute = 100000000\nmax_connections = 4096\n[creed]\nreflect = false\n";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** True when the module is the script node was asked to run (its CLI entry), not an import. */
export const isMain = (meta) =>
  process.argv[1] !== undefined && meta.url === pathToFileURL(process.argv[1]).href;

export function freePort() {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

const sseChunk = (delta, finish = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

const completion = (content) => ({
  id: "c",
  object: "chat.completion",
  created: 0,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/**
 * An OpenAI-compatible chat-completions server that answers every request with `answer` in one SSE
 * response, written at once (a JSON completion when the request does not ask to stream). With `stamps: n` it streams n content chunks instead, `gapMs` apart,
 * each carrying `[t=<performance.now()>]` taken just before the write (this process's clock, so a
 * client in the same process can tell how long the chunk took to reach it). `record: false` keeps
 * only the count of calls (long runs would otherwise hold every request body).
 */
export async function startMiniLlm(options = {}) {
  const {
    answer = "Hi.",
    stamps = 0,
    gapMs = 2,
    record = true,
  } = typeof options === "string" ? { answer: options } : options;
  const bodies = [];
  let calls = 0;
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => {
      raw += d;
    });
    req.on("end", async () => {
      calls += 1;
      if (record) bodies.push(raw);
      // A call without streaming (compaction's summary, for one) gets one JSON completion.
      if (!/"stream"\s*:\s*true/.test(raw)) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(completion(answer)));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (stamps === 0) {
        res.end(`${sseChunk({ role: "assistant", content: answer })}${sseChunk({}, "stop")}data: [DONE]\n\n`);
        return;
      }
      res.write(sseChunk({ role: "assistant", content: "" }));
      for (let i = 0; i < stamps; i++) {
        await sleep(gapMs);
        res.write(sseChunk({ content: `[t=${performance.now().toFixed(3)}]` }));
      }
      res.end(`${sseChunk({}, "stop")}data: [DONE]\n\n`);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    bodies,
    get calls() {
      return calls;
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Writes a data dir whose config points the default model at `llmUrl` and listens on a free port. */
export async function prepareHome(llmUrl, toml = "") {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), "spar-bench-"));
  writeFileSync(
    join(home, "config.toml"),
    `api_listen = "127.0.0.1:${port}"\n[default_model]\nprovider = "openai_compatible"\nmodel = "m"\nbase_url = "${llmUrl}"\n${toml}`,
  );
  return { home, port };
}

/** `spar init` in `home`: master key, encrypted database, default fighter. */
export function sparInit(home, bin = SPAR_BIN) {
  execFileSync(process.execPath, [bin, "init"], {
    env: { ...process.env, SPAR_HOME: home },
    stdio: "ignore",
  });
}

/** Polls `url` every `everyMs` until it answers 200; resolves with the time that took (from `since`). */
export async function waitHealthy(url, child, since = performance.now(), everyMs = 5, timeoutMs = 120_000) {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the process exited (${child.exitCode ?? child.signalCode}) before ${url} answered`);
    }
    const ok = await fetch(url).then(
      async (res) => {
        await res.arrayBuffer();
        return res.ok;
      },
      () => false,
    );
    if (ok) return performance.now() - since;
    if (performance.now() - since > timeoutMs)
      throw new Error(`${url} did not answer 200 in ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** A child process's stderr, the last few kilobytes of it, for error messages. */
function stderrTail(child) {
  let tail = "";
  child.stderr?.on("data", (d) => {
    tail = (tail + d).slice(-4000);
  });
  return () => tail.trim();
}

/**
 * Starts `spar start` with a config whose default model is `llmUrl`; resolves once it is healthy.
 * `prepare(home)` runs after `spar init`, before the start (e.g. to authorize a key). `nodeArgs` go
 * before the script (e.g. --cpu-prof). `home` reuses a data dir made by prepareHome.
 */
export async function startDaemon(llmUrl, options = {}) {
  const { toml = "", prepare, bin = SPAR_BIN, nodeArgs = [], existing } = options;
  const { home, port } = existing ?? (await prepareHome(llmUrl, toml));
  if (prepare) {
    sparInit(home, bin);
    prepare(home);
  }
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, bin, "start"], {
    env: { ...process.env, SPAR_HOME: home },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = stderrTail(child);
  const url = `http://127.0.0.1:${port}`;
  let healthyMs;
  try {
    healthyMs = await waitHealthy(`${url}/api/v1/health`, child, started);
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${err.message}${stderr() ? `; its stderr: ${stderr()}` : ""}`);
  }
  const exited = new Promise((r) => child.once("exit", r));
  return {
    url,
    home,
    port,
    pid: child.pid,
    healthyMs,
    child,
    /** Stops the daemon (SIGTERM by default) and, unless `keepHome`, removes its data dir. */
    async stop({ signal = "SIGTERM", keepHome = existing !== undefined } = {}) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
      if (!keepHome) rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Resident memory in MiB of a process and all its descendants (VmRSS from /proc). */
export { treeRssMiB as rssMiB } from "./suite/proc.mjs";

export async function post(url, body, headers = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text;
}

export { timed as roundTrips } from "./suite/http.mjs";
export { pool };

/** Creates fighters `${prefix}0` … over HTTP, `clients` at a time; resolves with their names. */
export async function createFighters(url, prefix, count, clients = 16) {
  const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  await pool(count, clients, (i) =>
    post(`${url}/api/v1/fighters`, {
      manifest: { name: names[i], description: "a bench fighter", system_prompt: "Be brief." },
    }),
  );
  return names;
}

// Statistics.

const sorted = (xs) => [...xs].sort((a, b) => a - b);

export function percentile(xs, p) {
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export function median(xs) {
  const s = sorted(xs);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** The median of repeated measurements with their range: `{ median, min, max, n }`. */
export function spread(xs) {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length };
}

/** "123 ms (110–140)": a median and its min–max range, `digits` after the point. */
export function fmtSpread(s, unit, digits = 0) {
  const f = (x) => x.toFixed(digits);
  return `${f(s.median)} ${unit} (${f(s.min)}–${f(s.max)})`;
}

export const fmt = (x, unit, digits = 1) => `${x.toFixed(digits)} ${unit}`;

/** A row of the results table. `met` is only a report: nothing fails on a timing. */
export function row(figure, spar, baseline, { ratio, goal = "—", met, note } = {}) {
  return { figure, spar, baseline, ratio, goal, met, note };
}

/** Prints rows as a plain table on stdout (the standalone entry of each part uses it). */
export function printRows(rows) {
  const cells = rows.map((r) => [
    r.figure,
    r.spar,
    r.baseline,
    r.ratio === undefined ? "—" : `${r.ratio.toFixed(2)}×`,
    r.goal,
    r.met === undefined ? "—" : r.met ? "yes" : "no",
  ]);
  const head = ["figure", "Spar", "baseline", "ratio", "goal", "met?"];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((x, i) => x.padEnd(widths[i])).join("  ");
  console.log(line(head));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const c of cells) console.log(line(c));
  for (const r of rows) if (r.note) console.log(`  · ${r.figure}: ${r.note}`);
}

/** A short name for a --bin path, for row labels when several builds run side by side. */
export const binLabel = (bin, bins) => (bins.length > 1 ? ` [${bin}]` : "");
