/**
 * The spans, made by one observer of sdk/observe.ts. The context (which span is current) is kept
 * by OpenTelemetry's AsyncLocalStorage context manager, held here rather than registered globally,
 * so nothing else in the process (an SDK that brings its own OpenTelemetry API) sees or changes it.
 *
 * Model calls follow the GenAI semantic conventions (`chat {model}`, kind CLIENT, `gen_ai.*`), a
 * move is `execute_tool {name}`, a turn `invoke_agent {fighter}`. Attributes carry names, counts
 * and outcomes only, never a message's content nor a key.
 */
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-base";
import type { ObservedEnd, ObservedOperation, Observer } from "../../sdk/index.js";

export interface TraceSettings {
  enabled: boolean;
  endpoint: string;
  headers_env?: string;
  service_name: string;
  sample_ratio: number;
}

/** `name=value,name=value` (values %-decoded), as OTEL_EXPORTER_OTLP_HEADERS writes them. */
export function parseHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/** A span's name, kind and first attributes for an operation. */
function describe(op: ObservedOperation): { name: string; kind: SpanKind; attributes: Attributes } {
  switch (op.kind) {
    case "turn":
      return {
        name: `invoke_agent ${op.fighter}`,
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": op.fighter,
          "spar.turn.origin": op.origin,
        },
      };
    case "model_call":
      return {
        name: `chat ${op.model}`,
        kind: SpanKind.CLIENT,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": op.provider,
          "gen_ai.request.model": op.model,
          "spar.model_call.streaming": op.streaming,
        },
      };
    case "move_call":
      return {
        name: `execute_tool ${op.move}`,
        kind: SpanKind.INTERNAL,
        attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": op.move },
      };
    case "store_commit":
      return {
        name: "store commit",
        kind: SpanKind.CLIENT,
        attributes: { "db.system.name": op.store === "postgres" ? "postgresql" : op.store },
      };
    case "channel_delivery":
      return {
        name: `channel deliver ${op.platform}`,
        kind: SpanKind.CLIENT,
        attributes: { "spar.channel.platform": op.platform },
      };
    case "gorilla_run":
      return {
        name: `gorilla run ${op.gorilla}`,
        kind: SpanKind.INTERNAL,
        attributes: {
          "spar.gorilla.name": op.gorilla,
          "spar.gorilla.trigger": op.trigger,
          "spar.gorilla.lateness_s": op.lateness_s,
        },
      };
  }
}

/** What the end adds: the outcome, and a model call's usage, response model and finish reason. */
function finish(span: Span, op: ObservedOperation, end: ObservedEnd): void {
  span.setAttribute(`spar.outcome`, end.outcome);
  if (end.error_code) span.setAttribute("error.type", end.error_code);
  if (end.turn_id) span.setAttribute("spar.turn.id", end.turn_id);
  if (op.kind === "model_call") {
    if (end.response_model) span.setAttribute("gen_ai.response.model", end.response_model);
    if (end.input_tokens !== undefined) span.setAttribute("gen_ai.usage.input_tokens", end.input_tokens);
    if (end.output_tokens !== undefined) span.setAttribute("gen_ai.usage.output_tokens", end.output_tokens);
    if (end.finish_reason) span.setAttribute("gen_ai.response.finish_reasons", [end.finish_reason]);
  }
  const failed = ["failed", "error", "aborted"].includes(end.outcome);
  if (failed)
    span.setStatus({ code: SpanStatusCode.ERROR, ...(end.error_code ? { message: end.error_code } : {}) });
}

export interface Tracing {
  observer: Observer;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

export function createTracing(
  settings: TraceSettings,
  headerText: string | undefined,
  version: string,
): Tracing {
  const contexts = new AsyncLocalStorageContextManager().enable();
  const propagator = new W3CTraceContextPropagator();
  const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: parseHeaders(headerText) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": settings.service_name, "service.version": version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sample_ratio) }),
    // A short delay: a turn's spans reach the collector within a second, not five.
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 500 })],
  });
  const tracer = provider.getTracer("spar", version);

  const observer: Observer = {
    start(op) {
      const parent: Context = contexts.active();
      const { name, kind, attributes } = describe(op);
      const span = tracer.startSpan(name, { kind, attributes }, parent);
      const current = trace.setSpan(parent, span);
      return {
        within: (work) => contexts.with(current, work),
        end(end) {
          finish(span, op, end);
          span.end();
        },
      };
    },
    incoming: (headers, work) =>
      contexts.with(propagator.extract(contexts.active(), headers, defaultTextMapGetter), work),
    outgoing(headers) {
      propagator.inject(contexts.active(), headers, defaultTextMapSetter);
    },
  };

  return {
    observer,
    async shutdown() {
      await provider.shutdown();
      contexts.disable();
    },
  };
}
