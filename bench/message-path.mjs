// The message path under load, against a model that answers at once (so what is measured is Spar):
//   node bench/message-path.mjs [--bin path/to/bin/spar.js ...] [--messages N]
// For each daemon given (default: this checkout's), in the same run:
// - per-message overhead: one client, N sequential messages in one bout (the bout grows, as real
//   ones do); round trip minus the same client's round trip to the model server alone; p50 and p99;
// - throughput: 8 clients over 10 fighters and 64 clients over 100 fighters, messages per second.
// Several --bin flags compare builds side by side (e.g. before and after a change).
import { parseArgs } from "node:util";
import { SPAR_BIN, startDaemon, startMiniLlm } from "./lib.mjs";

const { values } = parseArgs({
  options: { bin: { type: "string", multiple: true }, messages: { type: "string", default: "400" } },
});
const bins = values.bin?.length ? values.bin : [SPAR_BIN];
const messages = Number(values.messages);
const TOML =
  "\n[quotas]\nrequests_per_minute = 1000000\ntokens_per_minute = 1000000000\n" +
  "[api]\nrate_limit_per_minute = 100000000\n[creed]\nreflect = false\n";

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function post(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status} ${text}`);
  return text;
}

async function roundTrips(n, once) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await once(i);
    times.push(performance.now() - t);
  }
  return times;
}

async function throughput(url, fighters, clients, total) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < total; i = next++) {
        await post(`${url}/api/v1/fighters/${fighters[i % fighters.length]}/message`, {
          message: `load ${i}`,
        });
      }
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

const llm = await startMiniLlm("Hi.");
console.log(`node ${process.version}; ${messages} sequential messages; model server answers at once\n`);
try {
  // The model alone, as the daemon calls it: the baseline every overhead figure subtracts.
  const direct = await roundTrips(messages, () =>
    post(`${llm.url}/chat/completions`, {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    }),
  );
  const base = percentile(direct, 50);
  console.log(
    `model server alone       p50 ${base.toFixed(2)} ms  p99 ${percentile(direct, 99).toFixed(2)} ms`,
  );
  for (const bin of bins) {
    const daemon = await startDaemon(llm.url, TOML, undefined, bin);
    try {
      const names = [];
      for (let i = 0; i < 100; i++) {
        const name = `bench-${i}`;
        await post(`${daemon.url}/api/v1/fighters`, {
          manifest: { name, description: "d", system_prompt: "Be brief." },
        });
        names.push(name);
      }
      await roundTrips(20, (i) =>
        post(`${daemon.url}/api/v1/fighters/spar/message`, { message: `warm ${i}` }),
      );
      const times = await roundTrips(messages, (i) =>
        post(`${daemon.url}/api/v1/fighters/bench-0/message`, { message: `message ${i}` }),
      );
      const overhead = (p) => (percentile(times, p) - base).toFixed(2);
      const t10 = await throughput(daemon.url, names.slice(0, 10), 8, 2000);
      const t100 = await throughput(daemon.url, names, 64, 4000);
      console.log(
        `${bin}\n  per-message overhead  p50 ${overhead(50)} ms  p99 ${overhead(99)} ms\n` +
          `  throughput  8 clients/10 fighters ${t10.toFixed(0)} msg/s   64 clients/100 fighters ${t100.toFixed(0)} msg/s`,
      );
    } finally {
      await daemon.stop();
    }
  }
} finally {
  llm.close();
}
