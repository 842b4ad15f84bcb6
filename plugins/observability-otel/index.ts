/**
 * OpenTelemetry traces (README "Metrics and traces"): off unless `[traces] enabled`; then the
 * OpenTelemetry SDK is imported and a span is made of every operation the kernel measures
 * (sdk/observe.ts), exported over OTLP/HTTP (JSON), and flushed when the daemon closes.
 */
import { addObserver, definePlugin, SparError } from "../../sdk/index.js";
import type { TraceSettings } from "./tracing.js";

export default definePlugin<{ traces: TraceSettings }>({
  id: "observability-otel",
  async apply({ hooks, env, kernelVersion }, sections) {
    const settings = sections.traces;
    if (!settings.enabled) return;
    const name = settings.headers_env;
    if (name && !env[name]) {
      throw new SparError("CONFIG_INVALID", `[traces] headers_env names ${name}, which is not set`);
    }
    const { createTracing } = await import("./tracing.js");
    const tracing = createTracing(settings, name ? env[name] : undefined, kernelVersion);
    const stop = addObserver(tracing.observer);
    hooks.daemon.close.tap(async () => {
      stop();
      await tracing.shutdown();
    });
  },
});
