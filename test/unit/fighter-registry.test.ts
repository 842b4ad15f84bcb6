/** The fighter registry against the real SQLite store: spawn, find, kill, and what survives a reload. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFighterRegistry, type FighterRegistry } from "../../kernel/fighters/fighter-registry.js";
import { fighterTemplate } from "../../lib/fighter-files.js";
import { createEventBus } from "../../plugins/bus-local/events.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { SparEvent } from "../../sdk/events.js";
import { CAPABILITY_TYPES } from "../../sdk/schemas.js";
import type { Store } from "../../sdk/store-types.js";
import type { FighterManifest, ModelSettings } from "../../sdk/types.js";
import { openTestStore } from "./harness.js";

const DEFAULT_MODEL: ModelSettings = { provider: "scripted", model: "scripted-1" };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let store: Store;
let closeStore: () => Promise<void>;
let published: SparEvent[];
let registry: FighterRegistry;

function newRegistry(
  modelProblem: (settings: ModelSettings) => string | undefined = () => undefined,
  events = createEventBus({ historySize: 1000 }),
  vetGrants?: (manifest: FighterManifest) => Promise<void>,
) {
  events.subscribe((event) => published.push(event));
  return createFighterRegistry({
    events,
    store: () => store,
    defaultModel: DEFAULT_MODEL,
    modelProblem,
    capabilities: new Set(CAPABILITY_TYPES),
    ...(vetGrants ? { vetGrants } : {}),
  });
}

beforeEach(async () => {
  ({ store, close: closeStore } = await openTestStore());
  published = [];
  registry = newRegistry();
});

afterEach(async () => {
  await closeStore();
});

const manifest = (name: string, extra: Record<string, unknown> = {}) => ({
  manifest: { name, description: `${name}, for tests`, system_prompt: `You are ${name}.`, ...extra },
});

async function refusal(promise: Promise<unknown>): Promise<SparError> {
  try {
    await promise;
  } catch (err) {
    if (isSparError(err)) return err;
    throw err;
  }
  throw new Error("expected a rejection");
}

describe("fighter registry", () => {
  it("spawns from a manifest: stored, announced, and recorded with the defaults filled in", async () => {
    const record = await registry.spawn(manifest("alice"));

    expect(record).toEqual({
      id: expect.stringMatching(UUID),
      name: "alice",
      description: "alice, for tests",
      status: "idle",
      weight_class: "middleweight",
      model: DEFAULT_MODEL,
      capabilities: [{ type: "memory" }],
      skills: [],
      created_at: expect.any(String),
    });
    expect(new Date(record.created_at).toISOString()).toBe(record.created_at);
    expect(await store.fighters.get(record.id)).toEqual(registry.find(record.id).row);
    expect(published).toEqual([
      expect.objectContaining({ kind: "fighter.spawned", fighter_id: record.id, name: "alice" }),
    ]);
  });

  it("records a manifest's own model, weight class, capabilities and skills", async () => {
    const model = { provider: "scripted", model: "bigger", max_tokens: 64 };
    const record = await registry.spawn(
      manifest("bob", {
        model,
        weight_class: "flyweight",
        capabilities: [{ type: "network", pattern: "*" }],
        skills: ["search"],
      }),
    );

    expect(record).toMatchObject({
      weight_class: "flyweight",
      model,
      capabilities: [{ type: "network", pattern: "*" }],
      skills: ["search"],
    });
    expect(registry.modelFor(registry.find("bob").row.manifest)).toEqual(model);
  });

  it("spawns from a template, under its own name or the one given", async () => {
    const coder = await registry.spawn({ template: "coder" });
    const named = await registry.spawn({ template: "scout", name: "scout-2" });

    expect(coder).toMatchObject({
      name: "coder",
      description: fighterTemplate("coder")?.description,
      weight_class: "heavyweight",
      capabilities: fighterTemplate("coder")?.capabilities,
    });
    expect(named).toMatchObject({ name: "scout-2", capabilities: fighterTemplate("scout")?.capabilities });
    expect(registry.find("scout-2").row.manifest.system_prompt).toBe(fighterTemplate("scout")?.system_prompt);
  });

  it("refuses an unknown template, prototype keys and the default fighter's kind", async () => {
    for (const template of ["wizard", "constructor", "toString", "__proto__", "spar"]) {
      const error = await refusal(registry.spawn({ template }));
      expect(error.code).toBe("VALIDATION_FAILED");
      expect(error.message).toBe(`unknown fighter kind "${template}"; kinds: coder, oracle, scout, scribe`);
    }
    expect(registry.all()).toEqual([]);
    expect(await store.fighters.list()).toEqual([]);
  });

  it("refuses an invalid manifest with the path of the problem, and a model that cannot work", async () => {
    const unknownKey = await refusal(registry.spawn(manifest("alice", { colour: "red" })));
    expect(unknownKey).toMatchObject({ code: "VALIDATION_FAILED", extra: { path: "/manifest" } });
    expect(unknownKey.message).toContain("colour");

    const picky = newRegistry((settings) =>
      settings.model === "nope" ? "no key for scripted/nope" : undefined,
    );
    const badModel = await refusal(
      picky.spawn(manifest("alice", { model: { provider: "scripted", model: "nope" } })),
    );
    expect(badModel).toMatchObject({
      code: "VALIDATION_FAILED",
      message: "no key for scripted/nope",
      extra: { path: "/manifest/model" },
    });
    expect(await store.fighters.list()).toEqual([]);
  });

  it("stores nothing and announces nothing when the grants are refused (the Ring's fighter.spawning)", async () => {
    const seen: FighterManifest[] = [];
    const strict = newRegistry(undefined, undefined, async (m) => {
      seen.push(m);
      throw new SparError("CAPABILITY_DENIED", "scope outside [moves.files] allowed_scopes", {
        path: "/manifest/capabilities/0/scope",
      });
    });
    const grants = [{ type: "file_read", scope: "/" }];
    const refused = await refusal(strict.spawn(manifest("wide", { capabilities: grants })));
    expect(refused).toMatchObject({
      code: "CAPABILITY_DENIED",
      extra: { path: "/manifest/capabilities/0/scope" },
    });
    expect(seen.map((m) => m.capabilities)).toEqual([grants]);
    // A template goes through the same check.
    await refusal(strict.spawn({ template: "coder" }));
    expect(seen).toHaveLength(2);
    expect(await store.fighters.list()).toEqual([]);
    expect(published.filter((e) => e.kind === "fighter.spawned")).toEqual([]);
  });

  it("refuses a second fighter with a live fighter's name as CONFLICT", async () => {
    await registry.spawn(manifest("alice"));

    const error = await refusal(registry.spawn(manifest("alice")));

    expect(error.code).toBe("CONFLICT");
    expect(error.message).toBe('a fighter named "alice" already exists; choose another name');
    expect(registry.all()).toHaveLength(1);
  });

  it("lets exactly one of two concurrent spawns of one name win", async () => {
    const results = await Promise.allSettled([
      registry.spawn(manifest("twin")),
      registry.spawn({ template: "oracle", name: "twin" }),
    ]);

    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
    expect(won).toHaveLength(1);
    expect(lost).toEqual([expect.objectContaining({ code: "CONFLICT" })]);
    expect(registry.all().map((f) => f.row.name)).toEqual(["twin"]);
    expect((await store.fighters.list()).map((row) => row.name)).toEqual(["twin"]);
    expect(published.filter((e) => e.kind === "fighter.spawned")).toHaveLength(1);
  });

  it("finds a fighter by id and by name, and says FIGHTER_NOT_FOUND otherwise", async () => {
    const alice = await registry.spawn(manifest("alice"));
    await registry.spawn(manifest("bob"));

    expect(registry.find(alice.id).row.name).toBe("alice");
    expect(registry.find("alice").row.id).toBe(alice.id);
    expect(registry.name(alice.id)).toBe("alice");
    expect(registry.name("no-such-id")).toBe("no-such-id");
    let error: unknown;
    try {
      registry.find("carol");
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({
      code: "FIGHTER_NOT_FOUND",
      message: 'no fighter with id or name "carol"',
      extra: { fighter: "carol" },
    });
  });

  it("kills a fighter: gone from the registry and the store, so a registry loaded afresh lacks it", async () => {
    const alice = await registry.spawn(manifest("alice"));
    const bob = await registry.spawn(manifest("bob"));
    const live = registry.find("alice");

    await registry.kill("alice");

    expect(registry.isLive(live)).toBe(false);
    expect(() => registry.find(alice.id)).toThrow(expect.objectContaining({ code: "FIGHTER_NOT_FOUND" }));
    expect(registry.name(alice.id)).toBe(alice.id);
    expect(published.at(-1)).toMatchObject({ kind: "fighter.killed", fighter_id: alice.id, name: "alice" });
    expect(await store.fighters.get(alice.id)).toBeUndefined();
    const reloaded = newRegistry();
    reloaded.load(await store.fighters.list());
    expect(reloaded.all().map((f) => f.row.id)).toEqual([bob.id]);
    expect(reloaded.find("bob").status).toBe("idle");
    expect(await refusal(registry.kill("alice"))).toMatchObject({ code: "FIGHTER_NOT_FOUND" });
  });

  it("frees a killed fighter's name for a new fighter", async () => {
    const first = await registry.spawn(manifest("alice"));
    await registry.kill(first.id);

    const second = await registry.spawn(manifest("alice"));

    expect(second.id).not.toBe(first.id);
    expect(registry.find("alice").row.id).toBe(second.id);
  });

  it("loads every fighter idle and announces status changes only when they change", async () => {
    await registry.spawn(manifest("alice"));
    const reloaded = newRegistry();
    reloaded.load(await store.fighters.list());
    const live = reloaded.find("alice");
    published.length = 0;

    reloaded.setStatus(live, "fighting");
    reloaded.setStatus(live, "fighting");
    reloaded.setStatus(live, "idle");

    expect(reloaded.record(live).status).toBe("idle");
    expect(published.map((e) => (e.kind === "fighter.status" ? e.status : e.kind))).toEqual([
      "fighting",
      "idle",
    ]);
  });
});

describe("fighter registry, two daemons sharing a store and a bus", () => {
  it("finds a fighter the other spawned, from the store at once and from the bus after, and drops it when the other kills it", async () => {
    const bus = createEventBus({ historySize: 1000 });
    const one = newRegistry(undefined, bus);
    const two = newRegistry(undefined, bus);
    const other = newRegistry();

    const alice = await one.spawn(manifest("alice"));

    // Asked before the announcement's store read settled: the store answers.
    expect((await two.lookup("alice")).row.id).toBe(alice.id);
    // A daemon on another bus never heard of it, but finds it in the shared store by id or name.
    expect(() => other.find(alice.id)).toThrow(/no fighter with id or name/);
    expect((await other.lookup(alice.id)).row.name).toBe("alice");
    const bob = await one.spawn(manifest("bob"));
    await expect.poll(() => two.all().map((f) => f.row.id)).toContain(bob.id);

    await one.kill("alice");

    expect(() => two.find("alice")).toThrow(/no fighter with id or name "alice"/);
    expect((await refusal(two.lookup("alice"))).code).toBe("FIGHTER_NOT_FOUND");
  });
});
