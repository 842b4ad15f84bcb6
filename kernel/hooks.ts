import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import type { RingHooks } from "../sdk/hooks.js";

/**
 * Builds the kernel's hooks (their contract, with each hook's kind and when it is called, is
 * sdk/hooks.ts): one frozen object. Plugins tap these once, on activation, with their plugin id as the
 * tap name (tapable cannot untap).
 */
export function createHooks(): RingHooks {
  const hooks: RingHooks = {
    store: {
      open: new AsyncSeriesBailHook(["options"]),
    },
    bus: {
      open: new AsyncSeriesBailHook(["options"]),
    },
    provider: {
      route: new AsyncSeriesWaterfallHook(["model", "context"]),
      resolve: new AsyncSeriesBailHook(["settings", "credential"]),
    },
    move: {
      resolve: new AsyncSeriesBailHook(["name"]),
      beforeCall: new AsyncSeriesBailHook(["info"]),
      afterCall: new AsyncSeriesWaterfallHook(["outcome", "info"]),
      list: new AsyncSeriesWaterfallHook(["moves", "context"]),
      skills: new AsyncSeriesWaterfallHook(["skills"]),
      mounts: new AsyncSeriesWaterfallHook(["mounts", "context"]),
    },
    fighter: {
      spawning: new AsyncSeriesBailHook(["manifest"]),
    },
    compaction: {
      resolve: new AsyncSeriesBailHook(["strategy"]),
      flush: new AsyncSeriesWaterfallHook(["facts", "input"]),
    },
    strategy: {
      resolve: new AsyncSeriesBailHook(["strategy"]),
    },
    channel: {
      resolve: new AsyncSeriesBailHook(["platform"]),
    },
    tunnel: {
      open: new AsyncSeriesBailHook(["request"]),
    },
    turn: {
      prepare: new AsyncSeriesWaterfallHook(["prompt", "context"]),
      end: new AsyncSeriesHook(["summary"]),
      after: new AsyncSeriesHook(["summary"]),
    },
    daemon: {
      ready: new AsyncSeriesHook(["listen"]),
      close: new AsyncSeriesHook([]),
    },
    arena: {
      routes: new AsyncSeriesHook(["registry"]),
    },
    spend: {
      budgets: new AsyncSeriesWaterfallHook(["rules", "context"]),
      reserve: new AsyncSeriesBailHook(["request"]),
      ask: new AsyncSeriesBailHook(["question"]),
    },
    events: {
      published: new AsyncParallelHook(["event"]),
    },
  };
  for (const group of Object.values(hooks)) Object.freeze(group);
  return Object.freeze(hooks);
}
