// The usage query over a large ledger (issue 31 item 4): a store-sqlite database with 1M model calls
// spread over 90 days and 50 fighters, then Store.usage.query as GET /api/v1/usage asks it (the last
// 30 days by day with a time zone's offsets, by model, by fighter, by origin, and one fighter's days),
// each timed (median of 5 after a warm-up) with SQLite's plan for it. The rows are written straight
// into the keyed database in one transaction (the store's own writes wait for a durable commit each).
// After `npm run build`:  node bench/usage-query.mjs [rows]
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, isMain, median, printRows, ROOT, row } from "./lib.mjs";

const DAY_MS = 86_400_000;
const MODELS = [
  ["openai", "gpt-4o-mini"],
  ["openai", "gpt-4o"],
  ["anthropic", "claude-sonnet-4-5"],
  ["google", "gemini-2.5-flash"],
  ["ollama", "llama3.2"],
];
const ORIGINS = [
  "user",
  "channel:telegram:42",
  "channel:slack:C1",
  "gorilla:digest",
  "schedule",
  "troop-task:t1",
];

export async function usageQuery({ rows = 1_000_000, fighters = 50 } = {}) {
  const { openSqliteStore } = await import(join(ROOT, "dist", "plugins", "store-sqlite", "store.js"));
  const { deriveKey, rawKeyLiteral } = await import(join(ROOT, "dist", "plugins", "store-sqlite", "key.js"));
  const { openRetained } = await import(join(ROOT, "dist", "plugins", "store-sqlite", "retain.js"));
  const { usageQuerySql } = await import(join(ROOT, "dist", "plugins", "store-sqlite", "usage.js"));
  const { zoneOffsets } = await import(join(ROOT, "dist", "lib", "usage-report.js"));
  const home = mkdtempSync(join(tmpdir(), "spar-bench-usage-"));
  const secret = Buffer.from("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  try {
    const ids = Array.from({ length: fighters }, () => randomUUID());
    let store = await openSqliteStore({ home, masterSecret: Buffer.from(secret) });
    for (const [i, id] of ids.entries()) {
      await store.fighters.insert({
        id,
        name: `f${i}`,
        manifest: { name: `f${i}`, description: "bench", system_prompt: "bench" },
        created_at: new Date().toISOString(),
      });
    }
    await store.close();

    const now = Date.now();
    const writeStarted = performance.now();
    const key = await deriveKey(secret, readFileSync(join(home, "spar.db.salt")));
    const db = openRetained(join(home, "spar.db"), { fileMustExist: true });
    db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
    db.key(rawKeyLiteral(key));
    const insert = db.prepare(
      `INSERT INTO usage (fighter_id, provider, model, at, input_tokens, output_tokens, bout_id, turn_id, origin,
         cached_tokens, cache_write_tokens, cost_micros, currency) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, 0, ?, 'USD')`,
    );
    db.transaction(() => {
      for (let i = 0; i < rows; i++) {
        const [provider, model] = MODELS[i % MODELS.length];
        const at = new Date(now - Math.floor((i / rows) * 90 * DAY_MS)).toISOString();
        insert.run(
          ids[i % fighters],
          provider,
          model,
          at,
          1200,
          80,
          ORIGINS[i % ORIGINS.length],
          1024,
          150 + (i % 97),
        );
      }
    })();
    db.exec("ANALYZE");
    const writeMs = performance.now() - writeStarted;

    const since = now - 30 * DAY_MS;
    const range = { since: new Date(since).toISOString(), until: new Date(now + DAY_MS).toISOString() };
    const days = zoneOffsets(since, now + DAY_MS, "America/New_York");
    const queries = [
      ["30 days by day (America/New_York)", { by: "day", ...range, days }],
      ["30 days by model", { by: "model", ...range }],
      ["30 days by fighter", { by: "fighter", ...range }],
      ["30 days by origin kind, channel only", { by: "origin", ...range, origin: "channel" }],
      ["one fighter's 30 days by day", { by: "day", ...range, days, fighter_id: ids[0] }],
    ];
    const plans = queries.map(([name, query]) => {
      const { sql, params } = usageQuerySql(query);
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((r) => r.detail)
        .join("; ");
      return [name, plan];
    });
    db.close();

    store = await openSqliteStore({ home, masterSecret: Buffer.from(secret) });
    const inRange = await store.usage.query({ by: "provider", ...range });
    const results = [
      row(
        `ledger of ${rows.toLocaleString("en")} calls written (one transaction)`,
        fmt(writeMs / 1000, "s", 1),
        "—",
        {
          note: `${inRange.reduce((n, g) => n + g.requests, 0).toLocaleString("en")} of them in the last 30 days`,
        },
      ),
    ];
    for (const [i, [name, query]] of queries.entries()) {
      await store.usage.query(query);
      const times = [];
      for (let run = 0; run < 5; run++) {
        const started = performance.now();
        await store.usage.query(query);
        times.push(performance.now() - started);
      }
      results.push(row(`usage query: ${name}`, fmt(median(times), "ms", 0), "—", { note: plans[i][1] }));
    }
    await store.close();
    return results;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

if (isMain(import.meta)) {
  console.log(`node ${process.version}\n`);
  printRows(await usageQuery({ rows: Number(process.argv[2] ?? 1_000_000) }));
}
