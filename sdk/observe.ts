/**
 * The one instrumentation layer (README "Metrics and traces"): the kernel and the plugins that do
 * the work mark each operation worth measuring here, once, and every observer (the Prometheus
 * plugin's counters, the OpenTelemetry plugin's spans) sees the same points. With no observer an
 * operation costs one length check: callers test `observing()` before building anything.
 *
 * The registry is per process, as OpenTelemetry's own API and prom-client's default registry are:
 * a daemon is one process, and an observer a plugin adds is removed when the daemon closes.
 */

/** The operations that are measured, each with the labels an observer may use (all bounded). */
export type ObservedOperation =
  /** A fighter's turn, from its admission to its end (`origin` is the origin's kind: `user`, `channel` …). */
  | { kind: "turn"; fighter: string; origin: string }
  /** One request to a model (each attempt of a retried call is one). */
  | { kind: "model_call"; provider: string; model: string; streaming: boolean }
  /** One tool call of a turn, from its checks to its result. */
  | { kind: "move_call"; move: string }
  /** The store making a turn's writes durable. */
  | { kind: "store_commit"; store: string }
  /** A reply (or a notice) posted to a messaging platform. */
  | { kind: "channel_delivery"; platform: string }
  /** A gorilla's cycle; `lateness_s`: its start after the fire it answers (0 when run by hand). */
  | { kind: "gorilla_run"; gorilla: string; trigger: string; lateness_s: number };

export type ObservedKind = ObservedOperation["kind"];

/**
 * How an operation ended. `outcome` per kind: turn `completed|failed|cancelled|refused`; model call
 * `ok|error`; move call `ok|error|refused|denied`; store commit and delivery `ok|error`; gorilla run
 * the run's outcome (`ok|failed|aborted`).
 */
export interface ObservedEnd {
  outcome: string;
  /** The error's code, when it failed with one. */
  error_code?: string;
  /** A turn's id, once it was recorded. */
  turn_id?: string;
  /** A model call's usage, cost in micro-units of `currency` (absent: unpriced), model and stop. */
  input_tokens?: number;
  output_tokens?: number;
  cost_micros?: number;
  currency?: string;
  response_model?: string;
  finish_reason?: string;
}

/** What an observer keeps of one operation while it runs. */
export interface Observation {
  /**
   * Runs the operation in the observer's context, so that operations started inside it are its
   * children (OpenTelemetry's `context.with`, an AsyncLocalStorage underneath).
   */
  within?<T>(work: () => T): T;
  /** The operation ended, after `seconds`. */
  end(result: ObservedEnd, seconds: number): void;
}

/** Incoming and outgoing request headers, as a propagator reads and writes them. */
export type HeaderCarrier = Record<string, string | string[] | undefined>;

/**
 * An observer of the measured operations.
 *
 * @example
 * const stop = addObserver({
 *   start: (op) => (op.kind === "turn" ? { end: (r, s) => log.info("turn", { outcome: r.outcome, s }) } : undefined),
 * });
 */
export interface Observer {
  /** An operation starts: what to do at its end (undefined: this observer ignores it). */
  start(operation: ObservedOperation): Observation | undefined;
  /** Runs `work` with the trace context of an incoming request's headers (W3C `traceparent`). */
  incoming?<T>(headers: HeaderCarrier, work: () => T): T;
  /** Adds the current trace context to an outgoing request's headers. */
  outgoing?(headers: Record<string, string>): void;
}

/** The gauges read when metrics are scraped, and what provides each. */
export type GaugeName = "approvals_pending";

const observers: Observer[] = [];
const gauges = new Map<GaugeName, () => number | Promise<number>>();

/**
 * Adds an observer; returns the function that removes it.
 *
 * @example
 * hooks.daemon.close.tap(addObserver(myObserver));
 */
export function addObserver(observer: Observer): () => void {
  observers.push(observer);
  return () => {
    const at = observers.indexOf(observer);
    if (at >= 0) observers.splice(at, 1);
  };
}

/**
 * Whether anyone observes: test it before building an operation, so unobserved work allocates nothing.
 *
 * @example
 * return observing() ? observe(op, work, ending) : work();
 */
export function observing(): boolean {
  return observers.length > 0;
}

/**
 * Runs `work` as the operation: every observer sees it start, runs it in its context, and sees it
 * end with what `ending` makes of its value or its error (the error is rethrown as it was).
 *
 * @example
 * const reply = await observe({ kind: "channel_delivery", platform }, () => post(text), (_v, err) => ({ outcome: err ? "error" : "ok" }));
 */
export async function observe<T>(
  operation: ObservedOperation,
  work: () => Promise<T>,
  ending: (value: T | undefined, error: unknown) => ObservedEnd,
): Promise<T> {
  const started = performance.now();
  const watching: Observation[] = [];
  for (const observer of observers) {
    const observation = safely(() => observer.start(operation));
    if (observation) watching.push(observation);
  }
  let run = work;
  for (const observation of watching) {
    const within = observation.within?.bind(observation);
    if (!within) continue;
    const inner = run;
    run = () => within(inner);
  }
  const finish = (result: ObservedEnd) => {
    const seconds = (performance.now() - started) / 1000;
    for (const observation of watching) safely(() => observation.end(result, seconds));
  };
  let value: T;
  try {
    value = await run();
  } catch (err) {
    finish(safely(() => ending(undefined, err)) ?? { outcome: "error" });
    throw err;
  }
  finish(safely(() => ending(value, undefined)) ?? { outcome: "ok" });
  return value;
}

/**
 * Runs `work` in the trace context an incoming request's headers carry (its `traceparent`), so the
 * turn it starts is that trace's child; just runs it when no observer propagates.
 *
 * @example
 * return withIncoming(request.headers, () => handler(request));
 */
export function withIncoming<T>(headers: HeaderCarrier, work: () => T): T {
  let run = work;
  for (const observer of observers) {
    const incoming = observer.incoming?.bind(observer);
    if (!incoming) continue;
    const inner = run;
    run = () => incoming(headers, inner);
  }
  return run();
}

/**
 * The trace context headers (`traceparent`, `tracestate`) for a request made now, to a model's API;
 * undefined when no observer propagates one. A provider driver adds them to its request.
 *
 * @example
 * const headers = outgoingHeaders();
 * await client.chat.completions.create(body, headers ? { headers } : {});
 */
export function outgoingHeaders(): Record<string, string> | undefined {
  if (observers.length === 0) return undefined;
  const headers: Record<string, string> = {};
  for (const observer of observers) safely(() => observer.outgoing?.(headers));
  return Object.keys(headers).length > 0 ? headers : undefined;
}

/**
 * Provides a gauge's reading, taken when metrics are scraped; returns the function that withdraws it.
 *
 * @example
 * hooks.daemon.close.tap(provideGauge("approvals_pending", () => records.pendingCount()));
 */
export function provideGauge(name: GaugeName, read: () => number | Promise<number>): () => void {
  gauges.set(name, read);
  return () => {
    if (gauges.get(name) === read) gauges.delete(name);
  };
}

/**
 * A gauge's reading now; undefined when nothing provides it (its plugin is off).
 *
 * @example
 * const pending = await readGauge("approvals_pending");
 */
export async function readGauge(name: GaugeName): Promise<number | undefined> {
  const read = gauges.get(name);
  return read ? await read() : undefined;
}

/** An observer's failure never fails the work it observes. */
function safely<T>(step: () => T): T | undefined {
  try {
    return step();
  } catch {
    return undefined;
  }
}
