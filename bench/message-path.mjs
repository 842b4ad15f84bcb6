// The message path under load, against a model that answers at once (so what is measured is Spar):
//   node bench/message-path.mjs [--bin path/to/bin/spar.js ...] [--messages N] [--runs N]
// For each daemon given (default: this checkout's), in the same run:
// - per-message overhead: one client, N sequential messages in one bout (the bout grows, as real
//   ones do), each followed by the same client's call to the model server alone; every Spar round
//   trip minus the median round trip to the model alone; p50 and p99;
// - throughput: 64 clients over 100 fighters, messages per second, median of several rounds, beside
//   the model server alone with the same 64 clients (the ceiling of this harness);
// - scaling: 64 clients over 1, 10, 100 and 1,000 fighters (fresh fighters for each row).
// Several --bin flags compare builds side by side (e.g. before and after a change).
import { parseArgs } from "node:util";
import {
  binLabel,
  createFighters,
  fmt,
  fmtSpread,
  isMain,
  median,
  percentile,
  pool,
  post,
  printRows,
  row,
  SPAR_BIN,
  spread,
  startDaemon,
  startMiniLlm,
  UNLIMITED_TOML,
} from "./lib.mjs";

const CLIENTS = 64;

const callModel = (llm) =>
  post(`${llm.url}/chat/completions`, {
    model: "m",
    stream: true,
    messages: [{ role: "user", content: "hi" }],
  });

const message = (url, fighter, text) => post(`${url}/api/v1/fighters/${fighter}/message`, { message: text });

async function throughput(total, task) {
  const ms = await pool(total, CLIENTS, task);
  return total / (ms / 1000);
}

/** Overhead and throughput of one build; `base` is the model-alone figures measured once. */
async function measureBuild(llm, bin, { messages, rounds, perRound, scaling }) {
  const daemon = await startDaemon(llm.url, { toml: UNLIMITED_TOML, bin });
  try {
    const { url } = daemon;
    await createFighters(url, "seq-", 1);
    for (let i = 0; i < 20; i++) await message(url, "spar", `warm ${i}`);
    const spar = [];
    const direct = [];
    for (let i = 0; i < messages; i++) {
      let t = performance.now();
      await message(url, "seq-0", `message ${i}`);
      spar.push(performance.now() - t);
      t = performance.now();
      await callModel(llm);
      direct.push(performance.now() - t);
    }
    const main = await createFighters(url, "tp-", 100);
    await throughput(300, (i) => message(url, main[i % main.length], `warm ${i}`));
    const rates = [];
    for (let r = 0; r < rounds; r++) {
      rates.push(await throughput(perRound, (i) => message(url, main[i % main.length], `load ${i}`)));
    }
    const scaled = [];
    for (const n of scaling) {
      if (n === 100) {
        scaled.push({ n, rate: median(rates) });
        continue;
      }
      const names = await createFighters(url, `s${n}-`, n);
      scaled.push({ n, rate: await throughput(perRound, (i) => message(url, names[i % n], `load ${i}`)) });
    }
    return { spar, direct, rates: spread(rates), scaled };
  } finally {
    await daemon.stop();
  }
}

export async function messagePath({
  bins = [SPAR_BIN],
  messages = 400,
  rounds = 3,
  perRound = 1000,
  scaling = [1, 10, 100, 1000],
} = {}) {
  const llm = await startMiniLlm({ record: false });
  try {
    for (let i = 0; i < 50; i++) await callModel(llm);
    const modelRates = [];
    for (let r = 0; r < rounds; r++) modelRates.push(await throughput(perRound, () => callModel(llm)));
    const modelRate = spread(modelRates);
    const rows = [];
    for (const bin of bins) {
      const label = binLabel(bin, bins);
      const m = await measureBuild(llm, bin, { messages, rounds, perRound, scaling });
      const base = median(m.direct);
      const overhead = m.spar.map((t) => t - base);
      const o50 = percentile(overhead, 50);
      const o99 = percentile(overhead, 99);
      rows.push(
        row(
          `per-message overhead p50, 1 client${label}`,
          `${fmt(o50, "ms", 2)} (round trip ${fmt(percentile(m.spar, 50), "ms", 2)})`,
          `model alone ${fmt(base, "ms", 2)}`,
          {
            goal: "≤2 ms",
            met: o50 <= 2,
            note: `${messages} sequential messages in one bout; each round trip minus the median round trip of the same client to the fake model alone (interleaved); p25–p75 of the overhead ${percentile(overhead, 25).toFixed(2)}–${percentile(overhead, 75).toFixed(2)} ms`,
          },
        ),
        row(
          `per-message overhead p99, 1 client${label}`,
          `${fmt(o99, "ms", 2)} (round trip ${fmt(percentile(m.spar, 99), "ms", 2)})`,
          `model alone p99 ${fmt(percentile(m.direct, 99), "ms", 2)}`,
          { goal: "≤10 ms", met: o99 <= 10 },
        ),
        row(
          `throughput, ${CLIENTS} clients over 100 fighters${label}`,
          fmtSpread(m.rates, "msg/s"),
          `model alone ${fmtSpread(modelRate, "req/s")}`,
          {
            goal: "≥2,000 msg/s",
            met: m.rates.median >= 2000,
            note: `median (min–max) of ${rounds} rounds of ${perRound} messages after a warm-up; the baseline is the fake model called directly by the same ${CLIENTS} clients`,
          },
        ),
      );
      for (const { n, rate } of m.scaled) {
        rows.push(
          row(
            `  scaling: ${CLIENTS} clients over ${n.toLocaleString("en")} ${n === 1 ? "fighter" : "fighters"}${label}`,
            fmt(rate, "msg/s", 0),
            "—",
            {
              note:
                n === scaling[0]
                  ? `one round of ${perRound} messages per row (the 100-fighter row is the median above), fresh fighters each row`
                  : undefined,
            },
          ),
        );
      }
    }
    return rows;
  } finally {
    llm.close();
  }
}

if (isMain(import.meta)) {
  const { values } = parseArgs({
    options: {
      bin: { type: "string", multiple: true },
      messages: { type: "string", default: "400" },
      runs: { type: "string", default: "3" },
    },
  });
  console.log(`node ${process.version}; model server answers at once\n`);
  printRows(
    await messagePath({
      bins: values.bin?.length ? values.bin : [SPAR_BIN],
      messages: Number(values.messages),
      rounds: Number(values.runs),
    }),
  );
}
