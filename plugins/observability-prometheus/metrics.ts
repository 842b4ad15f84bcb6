/**
 * The metrics (README "Metrics and traces"), kept in a registry of their own and fed by one observer
 * of sdk/observe.ts. Names follow Prometheus's conventions (`spar_` prefix, base units, `_total` for
 * counters); every label's values are bounded: outcomes and origins are fixed sets, providers and
 * models are those configured, moves those installed, and fighters only when `fighter_labels` is on.
 */
import client from "prom-client";
import {
  type ObservedEnd,
  type ObservedOperation,
  type Observer,
  type RingServices,
  readGauge,
} from "../../sdk/index.js";

export interface MetricsSettings {
  enabled: boolean;
  listen?: string;
  bearer_token_env?: string;
  fighter_labels: boolean;
}

const LATENCY = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const COMMIT = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const LATENESS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

export interface Metrics {
  observer: Observer;
  contentType: string;
  /** The registry in the text format, gauges read now. */
  text(): Promise<string>;
}

export function createMetrics(settings: MetricsSettings, ring: Pick<RingServices, "fighters">): Metrics {
  const registry = new client.Registry();
  const registers = [registry];
  // Event-loop lag, RSS, heap, GC, handles: prom-client's own collectors, under their usual names.
  client.collectDefaultMetrics({ register: registry });
  // Gauges named like counters, which promtool's lint refuses; the per-type `nodejs_active_*` stay.
  for (const name of [
    "nodejs_active_handles_total",
    "nodejs_active_requests_total",
    "nodejs_active_resources_total",
  ])
    registry.removeSingleMetric(name);
  const turnLabels = settings.fighter_labels ? ["outcome", "origin", "fighter"] : ["outcome", "origin"];
  const turns = new client.Counter({
    name: "spar_turns_total",
    help: "Turns ended, by outcome (completed, failed, cancelled, refused) and origin kind.",
    labelNames: turnLabels,
    registers,
  });
  const turnSeconds = new client.Histogram({
    name: "spar_turn_duration_seconds",
    help: "A turn's time from its admission to its end, queue included.",
    labelNames: settings.fighter_labels ? ["outcome", "fighter"] : ["outcome"],
    buckets: LATENCY,
    registers,
  });
  const modelCalls = new client.Counter({
    name: "spar_model_calls_total",
    help: "Requests to models, by configured provider and model, and outcome (ok, error).",
    labelNames: ["provider", "model", "outcome"],
    registers,
  });
  const modelSeconds = new client.Histogram({
    name: "spar_model_call_duration_seconds",
    help: "A model request's time, by provider, model and whether it streamed.",
    labelNames: ["provider", "model", "streaming"],
    buckets: LATENCY,
    registers,
  });
  const tokens = new client.Counter({
    name: "spar_model_tokens_total",
    help: "Tokens the providers reported, by provider, model and type (input, output).",
    labelNames: ["provider", "model", "type"],
    registers,
  });
  const cost = new client.Counter({
    name: "spar_model_cost_total",
    help: "What model calls cost at the configured prices, in units of their currency (unpriced models add nothing).",
    labelNames: ["provider", "model", "currency"],
    registers,
  });
  const moves = new client.Counter({
    name: "spar_move_calls_total",
    help: "Tool calls, by move and outcome (ok, error, refused: never ran; denied: a grant or policy said no).",
    labelNames: ["move", "outcome"],
    registers,
  });
  const moveSeconds = new client.Histogram({
    name: "spar_move_call_duration_seconds",
    help: "A tool call's time, checks and approval waits included.",
    labelNames: ["move"],
    buckets: LATENCY,
    registers,
  });
  const commitSeconds = new client.Histogram({
    name: "spar_store_commit_duration_seconds",
    help: "Time to make a turn's writes durable (SQLite: the batch's commit and WAL flush; PostgreSQL: COMMIT).",
    labelNames: ["store"],
    buckets: COMMIT,
    registers,
  });
  const deliveries = new client.Counter({
    name: "spar_channel_deliveries_total",
    help: "Replies and notices posted to messaging platforms, by platform and outcome.",
    labelNames: ["platform", "outcome"],
    registers,
  });
  const gorillaRuns = new client.Counter({
    name: "spar_gorilla_runs_total",
    help: "Gorilla cycles ended, by gorilla, trigger and outcome (ok, failed, aborted).",
    labelNames: ["gorilla", "trigger", "outcome"],
    registers,
  });
  const lateness = new client.Histogram({
    name: "spar_gorilla_run_lateness_seconds",
    help: "A scheduled gorilla cycle's start after the fire time it answers.",
    labelNames: ["gorilla"],
    buckets: LATENESS,
    registers,
  });
  let inFlight = 0;
  const fighterStatus = async () => {
    const counts: Record<string, number> = { idle: 0, fighting: 0, resting: 0, awaiting_approval: 0 };
    for (const fighter of await ring.fighters.list())
      counts[fighter.status] = (counts[fighter.status] ?? 0) + 1;
    return counts;
  };
  new client.Gauge({
    name: "spar_fighters",
    help: "Fighters by status (idle, fighting, resting, awaiting_approval), read at scrape.",
    labelNames: ["status"],
    registers,
    async collect() {
      for (const [status, n] of Object.entries(await fighterStatus())) this.set({ status }, n);
    },
  });
  new client.Gauge({
    name: "spar_turns_queued",
    help: "Turns admitted and waiting for their fighter's running turn to end, read at scrape.",
    registers,
    async collect() {
      this.set(Math.max(0, inFlight - ((await fighterStatus()).fighting ?? 0)));
    },
  });
  new client.Gauge({
    name: "spar_approvals_pending",
    help: "Move calls waiting for an operator's answer, read at scrape (absent while approvals are off).",
    registers,
    async collect() {
      const pending = await readGauge("approvals_pending");
      if (pending !== undefined) this.set(pending);
    },
  });

  function ended(operation: ObservedOperation, end: ObservedEnd, seconds: number): void {
    switch (operation.kind) {
      case "turn": {
        inFlight -= 1;
        const fighter = settings.fighter_labels ? { fighter: operation.fighter } : {};
        turns.inc({ outcome: end.outcome, origin: operation.origin, ...fighter });
        turnSeconds.observe({ outcome: end.outcome, ...fighter }, seconds);
        return;
      }
      case "model_call": {
        const { provider, model } = operation;
        modelCalls.inc({ provider, model, outcome: end.outcome });
        modelSeconds.observe({ provider, model, streaming: String(operation.streaming) }, seconds);
        if (end.input_tokens) tokens.inc({ provider, model, type: "input" }, end.input_tokens);
        if (end.output_tokens) tokens.inc({ provider, model, type: "output" }, end.output_tokens);
        if (end.cost_micros && end.currency)
          cost.inc({ provider, model, currency: end.currency }, end.cost_micros / 1e6);
        return;
      }
      case "move_call":
        moves.inc({ move: operation.move, outcome: end.outcome });
        moveSeconds.observe({ move: operation.move }, seconds);
        return;
      case "store_commit":
        commitSeconds.observe({ store: operation.store }, seconds);
        return;
      case "channel_delivery":
        deliveries.inc({ platform: operation.platform, outcome: end.outcome });
        return;
      case "gorilla_run":
        gorillaRuns.inc({ gorilla: operation.gorilla, trigger: operation.trigger, outcome: end.outcome });
        if (operation.trigger === "schedule")
          lateness.observe({ gorilla: operation.gorilla }, operation.lateness_s);
        return;
    }
  }

  return {
    observer: {
      start(operation) {
        if (operation.kind === "turn") inFlight += 1;
        return { end: (end, seconds) => ended(operation, end, seconds) };
      },
    },
    contentType: registry.contentType,
    text: () => registry.metrics(),
  };
}
