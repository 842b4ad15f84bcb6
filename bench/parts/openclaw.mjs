// Opt-in (BENCH_OPENCLAW=1): OpenClaw's gateway beside Spar, with the same harness and the same fake
// model: start → healthy, idle RSS, steady turn latency and the input of "hello". OpenClaw runs on
// Node 24 (it needs ≥ 24.16) fetched from the npm registry; Spar on this Node. Configured as its docs
// say: a custom provider under models.providers ("api": "openai-completions", baseUrl = the fake
// model), agents.defaults.model.primary = that model, gateway.mode = "local" on loopback with token
// auth, and the OpenAI-compatible endpoint (gateway.http.endpoints.chatCompletions) enabled, which
// runs a normal agent turn of the default agent. Health: /healthz (HTTP live) and /readyz (ready).
// Whatever cannot be measured is said, with the reason; no figure is made up.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, launch, sparHome, startSpar } from "../suite/daemon.mjs";
import { post } from "../suite/http.mjs";
import { callModel, startFakeModel } from "../suite/model.mjs";
import { installOpenClaw } from "../suite/openclaw-install.mjs";
import { figure } from "../suite/report.mjs";
import { message } from "../suite/spar-api.mjs";
import { median, medianSpread, num, p50p99, percentile, sleep } from "../suite/stats.mjs";
import { anatomy, describe, tokens } from "./prompt.mjs";

const IDLE_MS = 2000;
const TOKEN = "spar-bench-token";
const WARMUP_TURNS = 3;

/** An isolated OPENCLAW_HOME whose config points OpenClaw's default agent at the fake model. */
async function openClawHome(llmUrl) {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), "openclaw-bench-"));
  mkdirSync(join(home, ".openclaw"), { recursive: true });
  const config = {
    gateway: {
      mode: "local",
      port,
      bind: "loopback",
      auth: { mode: "token", token: TOKEN },
      http: { endpoints: { chatCompletions: { enabled: true } } },
    },
    update: { checkOnStart: false },
    logging: { file: join(home, "openclaw.log") },
    models: {
      mode: "merge",
      providers: {
        bench: {
          baseUrl: llmUrl,
          apiKey: "bench-key",
          api: "openai-completions",
          models: [
            { id: "m", name: "m", reasoning: false, input: ["text"], contextWindow: 128000, maxTokens: 1024 },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: "bench/m" } } },
  };
  writeFileSync(join(home, ".openclaw", "openclaw.json"), JSON.stringify(config, null, 2));
  return {
    home,
    port,
    url: `http://127.0.0.1:${port}`,
    remove: () => rmSync(home, { recursive: true, force: true }),
  };
}

function startOpenClaw(oc, data) {
  return launch({
    command: oc.node,
    args: [oc.entry, "gateway", "run", "--port", String(data.port)],
    env: {
      PATH: oc.env.PATH,
      OPENCLAW_HOME: data.home,
      OPENCLAW_NO_AUTO_UPDATE: "1",
      OPENCLAW_DISABLE_BONJOUR: "1",
      OPENCLAW_OFFLINE: "1",
    },
    healthUrl: `${data.url}/healthz`,
    logFile: join(data.home, "gateway.log"),
    timeoutMs: 180_000,
    group: true,
  });
}

/** One start: times to health (and to readiness), then the idle RSS of the process and its children. */
async function startOnce(start, readyPath, idleMs) {
  const server = await start();
  try {
    const readyMs = readyPath ? await server.until200(readyPath) : server.healthyMs;
    await sleep(idleMs);
    return { healthyMs: server.healthyMs, readyMs, rss: server.rss(), tree: server.treeRss() };
  } finally {
    await server.stop();
  }
}

/**
 * Sends "hello" (kind "hello": a fresh conversation), then `turns` steady turns in one conversation
 * (kind "first" starts it, "next" continues it) after a warm-up, each paired with a call of the
 * model alone; times both.
 */
async function conversation(llm, send, turns) {
  llm.state.bodies.length = 0;
  const before = llm.state.requests;
  await send("hello", "hello");
  await sleep(1000); // calls made after the reply (titles, memory, reflection) land now
  const hello = { calls: llm.state.requests - before, body: llm.state.bodies[0] };
  for (let i = 0; i < WARMUP_TURNS; i++) await send(`warm-up ${i}`, i === 0 ? "first" : "next");
  const model = [];
  const through = [];
  const callsBefore = llm.state.requests;
  for (let i = 0; i < turns; i++) {
    let t = performance.now();
    await callModel(llm.url);
    model.push(performance.now() - t);
    t = performance.now();
    await send(`message ${i}`, "next");
    through.push(performance.now() - t);
  }
  // Every turn made one call of the model alone besides the server's own calls.
  return { hello, model, through, callsPerTurn: (llm.state.requests - callsBefore - turns) / turns };
}

const firstLine = (err) => (err instanceof Error ? err.message : String(err)).split("\n")[0];

/**
 * Interleaved timed starts of each side, after one untimed first start each (which makes the data
 * dirs). A side that fails keeps its error and is not started again; the other goes on.
 */
async function measureStarts(sides, runs) {
  for (const side of sides) {
    side.starts = [];
    try {
      await startOnce(side.start, side.readyPath, 0);
    } catch (err) {
      side.startError = firstLine(err);
    }
  }
  for (let i = 0; i < runs; i++) {
    for (const side of sides.filter((x) => !x.startError)) {
      try {
        side.starts.push(await startOnce(side.start, side.readyPath, IDLE_MS));
      } catch (err) {
        side.startError = firstLine(err);
      }
    }
  }
}

/** Starts a side's server, holds the conversation, stops it; the result or { error }. */
async function measureTurns(llm, side, turns) {
  let server;
  try {
    server = await side.start();
    if (side.readyPath) await server.until200(side.readyPath);
    return await conversation(llm, (text, kind) => side.send(server, text, kind), turns);
  } catch (err) {
    return { error: firstLine(err) };
  } finally {
    await server?.stop();
  }
}

/** "Spar 412 ms …" or "Spar not measured: why". */
const either = (side, value) =>
  side.error ? `${side.name} not measured: ${side.error}` : `${side.name} ${value()}`;

/** A comparison figure: Spar measured, OpenClaw as its baseline, their ratio when both were measured. */
function compare(label, spar, claw, text, ratio) {
  return figure({
    label,
    measured: either(spar, () => text(spar)),
    baseline: either(claw, () => text(claw)),
    ratio: spar.error || claw.error ? undefined : ratio(),
  });
}

export async function openclaw({ runs, turns }) {
  const title = "OpenClaw beside Spar (opt-in)";
  if (process.env.BENCH_OPENCLAW !== "1") {
    return {
      title: `${title}: skipped`,
      notes: [
        "opt-in: BENCH_OPENCLAW=1 npm run bench -- openclaw (fetches Node 24 and the openclaw package, about 650 MB)",
      ],
      figures: [],
    };
  }
  let oc;
  try {
    oc = installOpenClaw((line) => console.log(line));
  } catch (err) {
    return {
      title,
      notes: [`could not install Node 24 and openclaw, so nothing of OpenClaw was measured: ${err.message}`],
      figures: [],
    };
  }
  const llm = await startFakeModel({ keep: 1 });
  const sparData = await sparHome({ llmUrl: llm.url, load: true });
  const ocData = await openClawHome(llm.url);
  const spar = {
    name: "Spar",
    start: () => startSpar(sparData),
    send: (server, text, kind) => message(server.api, "spar", text, kind === "next" ? {} : { bout: "new" }),
  };
  const claw = {
    name: "OpenClaw",
    start: () => startOpenClaw(oc, ocData),
    readyPath: `${ocData.url}/readyz`,
    send: (_server, text, kind) =>
      post(
        `${ocData.url}/v1/chat/completions`,
        {
          model: "openclaw/default",
          // no `user`: a fresh session for "hello"; one stable `user`: one session for the steady turns
          ...(kind === "hello" ? {} : { user: "spar-bench-steady" }),
          messages: [{ role: "user", content: text }],
        },
        { authorization: `Bearer ${TOKEN}` },
      ),
  };
  const notes = [
    `openclaw ${oc.version} on Node ${oc.nodeVersion} (installed in ${oc.dir}); Spar on Node ${process.version}`,
    ...oc.notes,
    "OpenClaw config: custom provider “bench” (api openai-completions, baseUrl = the fake model), agents.defaults.model.primary “bench/m”, gateway.mode local on loopback with token auth, gateway.http.endpoints.chatCompletions enabled, update.checkOnStart false; env OPENCLAW_NO_AUTO_UPDATE=1 OPENCLAW_DISABLE_BONJOUR=1 OPENCLAW_OFFLINE=1",
    "Spar config: the default model pointed at the same fake model, quotas and the API rate limit raised",
    `${runs} starts each, interleaved, after a first untimed start each; Spar healthy = GET /api/v1/health 200; OpenClaw: /healthz (HTTP live) and /readyz (ready for traffic), the ratio taken against /readyz; RSS ${IDLE_MS / 1000} s after ready, "with children" adds every descendant process's VmRSS`,
    `steady turns: ${turns} sequential turns in one conversation after ${WARMUP_TURNS} warm-up, each paired with a call of the model alone by the same client; Spar's default fighter over POST /api/v1/fighters/spar/message, OpenClaw's default agent over POST /v1/chat/completions (a normal agent turn)`,
  ];
  try {
    await measureStarts([spar, claw], runs);
    for (const side of [spar, claw]) {
      side.error = side.startError ?? (side.starts.length ? undefined : "no start completed");
      if (side.startError) notes.push(`${side.name} start failed: ${side.startError}`);
    }
    const pick = (side, key) => side.starts.map((x) => x[key]);
    const figures = [
      compare(
        "start → healthy, Spar vs OpenClaw",
        spar,
        claw,
        (side) =>
          side.readyPath
            ? `/readyz ${medianSpread(pick(side, "readyMs"), "ms")}; /healthz ${medianSpread(pick(side, "healthyMs"), "ms")}`
            : medianSpread(pick(side, "healthyMs"), "ms"),
        () => median(pick(spar, "healthyMs")) / median(pick(claw, "readyMs")),
      ),
      compare(
        "idle RSS, Spar vs OpenClaw",
        spar,
        claw,
        (side) =>
          `${medianSpread(pick(side, "rss"), "MiB", 1)}; with children ${medianSpread(pick(side, "tree"), "MiB", 1)}`,
        () => median(pick(spar, "tree")) / median(pick(claw, "tree")),
      ),
    ];

    for (const side of [spar, claw]) {
      side.turns = await measureTurns(llm, side, turns);
      side.error = side.turns.error;
      if (side.error) notes.push(`${side.name} turns failed: ${side.error}`);
      else {
        const t = side.turns;
        notes.push(
          `${side.name}: ${num(t.callsPerTurn, 2)} model calls per steady turn, ${t.hello.calls} for "hello"; "hello" ${describe(anatomy(t.hello.body))}`,
        );
      }
    }
    const over = (t, p) => percentile(t.through, p) - percentile(t.model, p);
    figures.push(
      compare(
        "steady turn round trip, Spar vs OpenClaw",
        spar,
        claw,
        ({ turns: t }) =>
          `${p50p99(t.through)} (over the model alone: p50 ${num(over(t, 50), 2)} ms, p99 ${num(over(t, 99), 2)} ms)`,
        () => percentile(spar.turns.through, 50) / percentile(claw.turns.through, 50),
      ),
      compare(
        '"hello" input, Spar vs OpenClaw (first model request)',
        spar,
        claw,
        ({ turns: t }) => {
          const a = anatomy(t.hello.body);
          return `≈ ${tokens(a.total)} tokens (${a.total} chars, ${a.tools} tools)`;
        },
        () => anatomy(spar.turns.hello.body).total / anatomy(claw.turns.hello.body).total,
      ),
    );
    return { title, notes, figures };
  } finally {
    sparData.remove();
    ocData.remove();
    await llm.close();
  }
}
