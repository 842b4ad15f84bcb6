/**
 * The message path built from its real parts for unit tests: hooks, event bus, fighter registry, the
 * SQLite store in a temp dir and the config's defaults. The one stand-in is the model: a scripted
 * driver tapped on `provider.resolve`, which the test answers call by call.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFighterRegistry, type FighterRegistry } from "../../kernel/fighters/fighter-registry.js";
import { createHooks } from "../../kernel/hooks.js";
import { loadConfig } from "../../kernel/host/config.js";
import type { PluginHost } from "../../kernel/host/plugin-host.js";
import { contextWindows } from "../../kernel/turns/compaction.js";
import { createMessagePath } from "../../kernel/turns/message-path.js";
import { createPriceBook } from "../../lib/pricing.js";
import { createPromptCaching } from "../../lib/prompt-cache.js";
import { createUsageMeter } from "../../lib/usage-meter.js";
import { createLocalBus } from "../../plugins/bus-local/bus.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import type { SparConfig } from "../../sdk/config.js";
import type { EventBus, SparEvent } from "../../sdk/events.js";
import type { RingHooks } from "../../sdk/hooks.js";
import type { Logger } from "../../sdk/index.js";
import { CAPABILITY_TYPES } from "../../sdk/schemas.js";
import type { FighterMessageResult, MoveListing } from "../../sdk/services.js";
import type { Store } from "../../sdk/store-types.js";
import type {
  FighterManifest,
  FighterRecord,
  LlmDriver,
  LlmRequest,
  LlmResponse,
  MoveContext,
  MoveDeclaration,
} from "../../sdk/types.js";

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The settled outcome of a promise, for asserting on a rejection's fields. */
export async function outcome<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A real SQLite store in a fresh temp dir. */
export async function openTestStore(): Promise<{ store: Store; home: string; close(): Promise<void> }> {
  const home = mkdtempSync(join(tmpdir(), "spar-unit-"));
  const masterSecret = Buffer.from(randomBytes(32).toString("hex"));
  const store = await openSqliteStore({ home, masterSecret });
  return {
    store,
    home,
    async close() {
      await store.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface ConfigOverrides {
  agent?: Partial<SparConfig["agent"]>;
  quotas?: Partial<SparConfig["quotas"]>;
}

/** The defaults with the scripted model and overrides (no Creed: that is a plugin, not loaded here). */
export function testConfig(overrides: ConfigOverrides = {}): SparConfig {
  const base = loadConfig("/nonexistent", {});
  return {
    ...base,
    default_model: { provider: "scripted", model: "scripted-1" },
    agent: { ...base.agent, ...overrides.agent },
    quotas: { ...base.quotas, ...overrides.quotas },
  };
}

/** Log lines, kept for assertions. */
export function recordingLog(): Logger & { lines: { level: string; message: string; fields?: unknown }[] } {
  const lines: { level: string; message: string; fields?: unknown }[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    lines.push({ level, message, fields });
  };
  return { lines, info: at("info"), warn: at("warn"), error: at("error") };
}

/** One model call as the scripted driver received it. */
export interface LlmCall {
  readonly request: LlmRequest;
  /** The fighter it is for, read from its system prompt ("You are <name>."). */
  readonly fighter: string;
  /** The text of the last user message in the prompt. */
  readonly lastUser: string;
}

export type Script = (call: LlmCall) => Partial<LlmResponse> | Promise<Partial<LlmResponse>>;

/**
 * An in-process model: answers each call from `script` (by default "reply to <last user text>"),
 * records every call and how many were in flight at once, per fighter and in all, and honours the
 * call's signal the way a real driver does (an aborted call rejects with the signal's reason).
 */
export function scriptedLlm() {
  const calls: LlmCall[] = [];
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  let maxTotal = 0;
  let script: Script = (call) => ({ text: `reply to ${call.lastUser}` });
  const waiters: { count: number; done: () => void }[] = [];

  const total = () => [...inFlight.values()].reduce((n, v) => n + v, 0);

  const driver: LlmDriver = {
    provider: "scripted",
    probe: async () => "ok",
    async complete(request) {
      const lastUser = request.messages.findLast((m) => m.role === "user")?.content ?? "";
      const fighter = /^You are ([^.]+)\./.exec(request.system)?.[1] ?? "?";
      const call: LlmCall = { request: { ...request }, fighter, lastUser };
      calls.push(call);
      inFlight.set(fighter, (inFlight.get(fighter) ?? 0) + 1);
      maxInFlight.set(fighter, Math.max(maxInFlight.get(fighter) ?? 0, inFlight.get(fighter) ?? 0));
      maxTotal = Math.max(maxTotal, total());
      for (const waiter of waiters.filter((w) => calls.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
      try {
        const aborted = new Promise<never>((_, reject) => {
          const signal = request.signal;
          if (!signal) return;
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
        const next = await Promise.race([Promise.resolve().then(() => script(call)), aborted]);
        return {
          text: "",
          tool_calls: [],
          usage: { input_tokens: 10, output_tokens: 2 },
          stop_reason: "end",
          model: "scripted-1",
          ...next,
        };
      } finally {
        inFlight.set(fighter, (inFlight.get(fighter) ?? 1) - 1);
      }
    },
  };

  return {
    driver,
    calls,
    /** Replaces how calls are answered from now on. */
    answer(next: Script): void {
      script = next;
    },
    /** Resolves once `count` calls have arrived in all. */
    called(count: number): Promise<void> {
      if (calls.length >= count) return Promise.resolve();
      const wait = deferred();
      waiters.push({ count, done: () => wait.resolve() });
      return wait.promise;
    },
    maxInFlight: (fighter: string) => maxInFlight.get(fighter) ?? 0,
    inFlight: (fighter: string) => inFlight.get(fighter) ?? 0,
    get maxTotal() {
      return maxTotal;
    },
  };
}

export type ScriptedLlm = ReturnType<typeof scriptedLlm>;

export interface TestPath {
  readonly store: Store;
  readonly config: SparConfig;
  readonly hooks: RingHooks;
  readonly events: EventBus;
  /** Every event published since the path was built, in order. */
  readonly published: SparEvent[];
  readonly log: ReturnType<typeof recordingLog>;
  readonly fighters: FighterRegistry;
  readonly llm: ScriptedLlm;
  readonly path: ReturnType<typeof createMessagePath>;
  /** Spawns a fighter whose system prompt is "You are <name>." (so the driver knows whom a call is for). */
  spawn(name: string, manifest?: Partial<FighterManifest>): Promise<FighterRecord>;
  /** Declares a move (capability `memory` unless given) and provides its handler through `move.resolve`. */
  addMove(
    name: string,
    run: (input: Record<string, unknown>, context: MoveContext) => Promise<unknown>,
    declaration?: Partial<MoveDeclaration>,
  ): void;
  /** The fighter's most recently updated bout's messages and turns, oldest first. */
  history(fighter: string): Promise<{
    bouts: number;
    messages: Awaited<ReturnType<Store["messages"]["list"]>>;
    turns: Awaited<ReturnType<Store["turns"]["list"]>>;
  }>;
  /** Sends `text` and returns the result, for tests that only need the reply. */
  send(fighter: string, text: string): Promise<FighterMessageResult>;
  close(): Promise<void>;
}

export async function createTestPath(overrides: ConfigOverrides = {}): Promise<TestPath> {
  const { store, home, close } = await openTestStore();
  const config = testConfig(overrides);
  const hooks = createHooks();
  const bus = createLocalBus({
    historySize: 10_000,
    quotaWindowMs: config.quotas.window_s * 1000,
    onListenerError: () => undefined,
  });
  const { events } = bus;
  const published: SparEvent[] = [];
  events.subscribe((event) => published.push(event));
  const log = recordingLog();
  const fighters = createFighterRegistry({
    events,
    store: () => store,
    defaultModel: config.default_model,
    modelProblem: () => undefined,
    capabilities: new Set(CAPABILITY_TYPES),
  });
  const llm = scriptedLlm();
  hooks.provider.resolve.tapPromise("provider-scripted", async (settings) =>
    settings.provider === "scripted" ? llm.driver : undefined,
  );
  const declaredMoves = new Map<string, MoveListing>();
  const handlers = new Map<
    string,
    { name: string; run: (input: Record<string, unknown>, context: MoveContext) => Promise<unknown> }
  >();
  hooks.move.resolve.tapPromise("moves-test", async (name) => handlers.get(name));
  const path = createMessagePath({
    config,
    home,
    hooks,
    events,
    host: { activate: async () => undefined } as unknown as PluginHost,
    log,
    store: () => store,
    bus: () => bus,
    fighters,
    declaredMoves,
    credentialFor: () => ({ ok: true, credential: {}, names: [] }),
    contextWindow: contextWindows(new Map()),
    meter: createUsageMeter({ prices: createPriceBook(new Map(), config.pricing), store: () => store, log }),
    cacheKeyFor: createPromptCaching(config, new Set(["scripted"])),
  });

  return {
    store,
    config,
    hooks,
    events,
    published,
    log,
    fighters,
    llm,
    path,
    spawn: (name, manifest = {}) =>
      fighters.spawn({
        manifest: { name, description: name, system_prompt: `You are ${name}.`, ...manifest },
      }),
    addMove(name, run, declaration = {}) {
      declaredMoves.set(name, {
        name,
        description: name,
        capability: "memory",
        input_schema: { type: "object" },
        plugin: "moves-test",
        ...declaration,
      });
      handlers.set(name, { name, run });
    },
    async history(fighter) {
      const id = fighters.find(fighter).row.id;
      const bouts = await store.bouts.list(id);
      // The most recently updated of any origin: a fighter's messages to this one run in a bout of their own.
      const bout = bouts[0];
      if (!bout) return { bouts: 0, messages: [], turns: [] };
      const [messages, turns] = await Promise.all([store.messages.list(bout.id), store.turns.list(bout.id)]);
      return { bouts: bouts.length, messages, turns };
    },
    send: (fighter, text) => path.message(fighter, text),
    async close() {
      await path.stop();
      await close();
    },
  };
}
