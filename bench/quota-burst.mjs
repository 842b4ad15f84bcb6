// 1,000 concurrent messages to one fighter with the default quota of 60 requests per minute: how
// many are admitted and refused, how long the burst takes, and whether any is lost (every admitted
// message must be answered and stored, every refused one answered 429). After `npm run build`:
//   node bench/quota-burst.mjs [messages]
import { startDaemon, startMiniLlm } from "./lib.mjs";

const total = Number(process.argv[2] ?? 1000);
const llm = await startMiniLlm("ok");
const daemon = await startDaemon(llm.url);
try {
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: total }, (_, i) =>
      fetch(`${daemon.url}/api/v1/fighters/spar/message`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: `burst ${i}` }),
      }).then(
        async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.json() }),
        (err) => ({ status: 0, error: String(err) }),
      ),
    ),
  );
  const elapsed = performance.now() - started;
  const count = (s) => results.filter((r) => r.status === s).length;
  const bouts = await (await fetch(`${daemon.url}/api/v1/fighters/spar/bouts`)).json();
  const stored = bouts.bouts.reduce((n, b) => n + b.message_count, 0);
  const usage = await (await fetch(`${daemon.url}/api/v1/fighters/spar/usage`)).json();
  console.log(`${total} concurrent messages to one fighter, quota 60 requests/minute`);
  console.log(`  admitted (200)       ${count(200)}`);
  console.log(
    `  refused (429)        ${count(429)}  (all with Retry-After: ${results.filter((r) => r.status === 429).every((r) => r.retryAfter)})`,
  );
  console.log(`  other / lost         ${total - count(200) - count(429)}`);
  console.log(`  model calls          ${llm.bodies.length}`);
  console.log(`  messages stored      ${stored} (user + assistant for each admitted message)`);
  console.log(`  usage requests       ${usage.totals.requests}`);
  console.log(`  burst answered in    ${elapsed.toFixed(0)} ms`);
} finally {
  await daemon.stop();
  llm.close();
}
