// Observability's cost on the message path (README "Metrics and traces"): the per-message overhead
// of part 2, measured three times, each with a fresh daemon: metrics and traces off (the default),
// `[metrics] enabled` (prom-client observing every turn, model call, move and commit), and
// `[traces] enabled` exporting every span over OTLP/HTTP to a local sink that answers 200.
import { createServer } from "node:http";
import { LOAD_SUMMARY, withSpar } from "../suite/daemon.mjs";
import { request, timed } from "../suite/http.mjs";
import { callModel, startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { message, spawnFighters } from "../suite/spar-api.mjs";
import { num, p50p99, percentile } from "../suite/stats.mjs";

/** An OTLP/HTTP sink: takes every export, counts the bytes, answers 200. */
async function startSink() {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on("data", (chunk) => {
      bytes += chunk.length;
    });
    req.on("end", () => {
      exports += 1;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/traces`,
    stats: () => ({ exports, bytes }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** One mode's run: warm up, then `messages` messages interleaved with the model alone. */
async function measure(llm, extraToml, { messages, warmup }, after) {
  return withSpar(llm.url, { load: true, extraToml }, async (daemon) => {
    await spawnFighters(daemon.api, "bench-", 1);
    await spawnFighters(daemon.api, "warm-", 1);
    await timed(warmup, (i) => Promise.all([callModel(llm.url), message(daemon.api, "warm-0", `warm ${i}`)]));
    const model = [];
    const spar = [];
    for (let i = 0; i < messages; i++) {
      model.push(...(await timed(1, () => callModel(llm.url))));
      spar.push(...(await timed(1, () => message(daemon.api, "bench-0", `message ${i}`))));
    }
    const note = after ? await after(daemon) : undefined;
    return {
      spar,
      model,
      p50: percentile(spar, 50) - percentile(model, 50),
      p99: percentile(spar, 99) - percentile(model, 99),
      note,
    };
  });
}

export async function observability({ messages, warmup }) {
  const llm = await startFakeModel();
  const sink = await startSink();
  try {
    const off = await measure(llm, "", { messages, warmup });
    const metrics = await measure(
      llm,
      "\n[metrics]\nenabled = true\n",
      { messages, warmup },
      async (daemon) => {
        const scraped = await request(`${daemon.api}/metrics`);
        const turns = /spar_turns_total\{outcome="completed",origin="user"\} (\d+)/.exec(scraped.body)?.[1];
        return `a scrape after the run: ${scraped.body.length} bytes, spar_turns_total{outcome="completed"} ${turns}`;
      },
    );
    const traces = await measure(
      llm,
      `\n[traces]\nenabled = true\nendpoint = "${sink.url}"\n`,
      { messages, warmup },
      async () => {
        // The batch processor exports every 0.5 s: what it sent by the end of the run.
        const { exports, bytes } = sink.stats();
        return `the sink took ${exports} exports, ${num(bytes / 1024, 0)} KiB, during the run`;
      },
    );
    const row = (label, run) => [
      figure({
        label: `${label}: per-message overhead p50`,
        measured: `${num(run.p50, 2)} ms`,
        baseline: `off ${num(off.p50, 2)} ms`,
        goal: "≤ off + 0.5 ms",
        met: run.p50 <= off.p50 + 0.5,
      }),
      figure({
        label: `${label}: per-message overhead p99`,
        measured: `${num(run.p99, 2)} ms`,
        baseline: `off ${num(off.p99, 2)} ms`,
        goal: "≤ off + 2 ms",
        met: run.p99 <= off.p99 + 2,
      }),
    ];
    return {
      title: "Observability on the message path",
      notes: [
        `part 2's measure (${messages} sequential messages into one bout, each paired with the model alone, after ${warmup} warm-up messages) with a fresh daemon per mode`,
        `off (defaults): Spar ${p50p99(off.spar)}; model alone ${p50p99(off.model)}`,
        `[metrics] enabled: Spar ${p50p99(metrics.spar)}; ${metrics.note}`,
        `[traces] enabled, OTLP/HTTP JSON to a local sink, sample_ratio 1: Spar ${p50p99(traces.spar)}; ${traces.note}`,
        `limits raised: ${LOAD_SUMMARY}`,
      ],
      figures: [
        figure({
          label: "off: per-message overhead p50 / p99",
          measured: `${num(off.p50, 2)} / ${num(off.p99, 2)} ms`,
          baseline: "part 2's measure, defaults",
        }),
        ...row("metrics on", metrics),
        ...row("traces on", traces),
      ],
    };
  } finally {
    await Promise.all([llm.close(), sink.close()]);
  }
}
