// 1,000 concurrent messages to one fighter with the default quota of 60 requests per minute: how
// many are admitted and refused, how long the burst takes, and whether any is lost (every admitted
// message must be answered and stored, every refused one answered 429). After `npm run build`:
//   node bench/quota-burst.mjs [messages]
import { isMain, printRows, row, startDaemon, startMiniLlm } from "./lib.mjs";

export async function quotaBurst({ total = 1000 } = {}) {
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
    const refused = results.filter((r) => r.status === 429);
    const lost = total - count(200) - count(429);
    return [
      row(
        `${total} concurrent messages to one fighter, quota 60/min`,
        `${count(200)} admitted, ${count(429)} refused, ${lost} other or lost`,
        "—",
        {
          note:
            `all refusals with Retry-After: ${refused.every((r) => r.retryAfter)}; model calls ${llm.calls}; ` +
            `messages stored ${stored} (user + assistant per admitted message); usage requests ${usage.totals.requests}; ` +
            `answered in ${elapsed.toFixed(0)} ms`,
        },
      ),
    ];
  } finally {
    await daemon.stop();
    llm.close();
  }
}

if (isMain(import.meta)) printRows(await quotaBurst({ total: Number(process.argv[2] ?? 1000) }));
