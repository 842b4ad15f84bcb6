/** Usage per fighter and model: one row per answered message, summed when read. */
import type Database from "better-sqlite3-multiple-ciphers";
import type { UsageSummary } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

export function createUsage(db: Database.Database): StoreData["usage"] {
  const s = {
    record: db.prepare<[string, string, string, string, number, number], void>(
      "INSERT INTO usage (fighter_id, provider, model, at, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    summary: db.prepare<[string], UsageSummary>(
      `SELECT provider, model, count(*) AS requests, sum(input_tokens) AS input_tokens,
              sum(output_tokens) AS output_tokens
       FROM usage WHERE fighter_id = ? GROUP BY provider, model ORDER BY provider, model`,
    ),
  };
  return {
    record(fighterId, entry, at) {
      s.record.run(fighterId, entry.provider, entry.model, at, entry.input_tokens, entry.output_tokens);
    },
    summary: (fighterId) => s.summary.all(fighterId),
  };
}
