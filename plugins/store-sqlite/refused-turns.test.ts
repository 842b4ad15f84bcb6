/**
 * Settling the turns a full disk cut short (refused-turns.ts), on the synchronous data layer: a turn
 * holding only its user message is undone with its Idempotency-Key (so a retry runs afresh and the
 * bout counts right); one holding steps ends failed with STORAGE_FULL as its reply; a turn that
 * ended meanwhile is left alone. The full disk itself is test/faults/disk-full.test.ts's business.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterRow } from "../../sdk/index.js";
import { migrate } from "./migrations.js";
import { createSqliteStore } from "./queries.js";
import { createRefusedTurns, type RefusedTurns } from "./refused-turns.js";
import { openRetained } from "./retain.js";
import type { StoreData } from "./sync-store.js";

let home = "";
let db: Database.Database;
let data: StoreData;
let refused: RefusedTurns;
const ada: FighterRow = {
  id: randomUUID(),
  name: "ada",
  manifest: { name: "ada", description: "", system_prompt: "" },
  created_at: "2026-01-01T00:00:00.000Z",
};

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "spar-refused-"));
  const path = join(home, "spar.db");
  db = openRetained(path, {});
  db.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON");
  migrate(db, path);
  data = createSqliteStore(db);
  data.fighters.insert(ada);
  refused = createRefusedTurns(db, () => "2026-01-02T00:00:00.000Z");
});
afterAll(() => {
  data.close();
  rmSync(home, { recursive: true, force: true });
});

const begin = (content: string, key: string, bout_id?: string) =>
  data.turns.begin({
    fighter_id: ada.id,
    ...(bout_id ? { bout_id } : {}),
    user: { role: "user", content },
    idempotency: { key, request_hash: "h" },
  });

describe("turns a full disk refused", () => {
  it("undoes a turn that holds only its user message, with its key, and the bout's count", () => {
    const first = begin("kept", "k-kept");
    data.turns.finish(first.turn.id, {
      status: "completed",
      messages: [{ role: "assistant", content: "ok" }],
      usage: { input_tokens: 0, output_tokens: 0 },
      iterations: 1,
    });
    const cut = begin("refused", "k-refused", first.bout.id);
    refused.refuse(cut.turn.id);
    expect(refused.has(cut.turn.id)).toBe(true);
    expect(refused.settle()).toBe(true);
    expect(refused.pending).toBe(0);
    // The kernel's own end of it, coming after, is taken as done: it must not meet a missing turn.
    expect(refused.has(cut.turn.id)).toBe(true);
    expect(data.turns.get(cut.turn.id)).toBeUndefined();
    expect(data.idempotency.get("k-refused")).toBeUndefined();
    expect(data.messages.list(first.bout.id).map((m) => m.content)).toEqual(["kept", "ok"]);
    expect(data.bouts.get(first.bout.id)?.message_count).toBe(2);
    // The key is free again: a retry runs as a new turn.
    const retry = begin("refused", "k-refused", first.bout.id);
    expect(data.messages.list(first.bout.id).map((m) => m.content)).toEqual(["kept", "ok", "refused"]);
    expect(data.turns.get(retry.turn.id)?.status).toBe("running");
  });

  it("ends a turn that holds steps failed with STORAGE_FULL, keeping them and replying the failure", () => {
    const cut = begin("with a tool", "k-tool");
    data.turns.append(cut.turn.id, [{ role: "assistant", content: "calling a tool" }]);
    refused.refuse(cut.turn.id);
    expect(refused.settle()).toBe(true);
    expect(data.turns.get(cut.turn.id)).toMatchObject({ status: "failed", error: { code: "STORAGE_FULL" } });
    expect(data.idempotency.get("k-tool")?.reply).toMatchObject({
      ok: false,
      error: { code: "STORAGE_FULL" },
    });
    expect(data.messages.list(cut.bout.id).map((m) => m.content)).toEqual(["with a tool", "calling a tool"]);
  });

  it("leaves a turn alone that ended meanwhile", () => {
    const done = begin("ended", "k-ended");
    data.turns.finish(done.turn.id, {
      status: "completed",
      messages: [],
      usage: { input_tokens: 0, output_tokens: 0 },
      iterations: 1,
    });
    refused.refuse(done.turn.id);
    expect(refused.settle()).toBe(false);
    expect(refused.pending).toBe(0);
    expect(data.turns.get(done.turn.id)?.status).toBe("completed");
  });
});
