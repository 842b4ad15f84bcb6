/**
 * Prometheus metrics (README "Metrics and traces"): off unless `[metrics] enabled`; then prom-client
 * is imported, the metrics observe the kernel's measuring points (sdk/observe.ts), and they are
 * served at `GET /api/v1/metrics` on the API listener (signed with a key that may read, or unsigned
 * on loopback, as every API route) and, with `[metrics] listen`, on a listener of their own.
 */
import type { Server } from "node:http";
import { addObserver, definePlugin } from "../../sdk/index.js";
import type { MetricsSettings } from "./metrics.js";

export default definePlugin<{ metrics: MetricsSettings }>({
  id: "observability-prometheus",
  async apply({ hooks, ring, env, log }, sections) {
    const settings = sections.metrics;
    if (!settings.enabled) return;
    const [{ createMetrics }, { listenerPlan, startListener }] = await Promise.all([
      import("./metrics.js"),
      import("./listener.js"),
    ]);
    // Refused at start, before anything listens: an unsigned listener open to the network.
    const plan = listenerPlan(settings, env);
    const metrics = createMetrics(settings, ring);
    const stop = addObserver(metrics.observer);
    hooks.arena.routes.tap((routes) =>
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/metrics",
        operationId: "getMetrics",
        summary: "The daemon's metrics in the Prometheus text format (with [metrics] enabled)",
        response: {
          "200": {
            description: "Prometheus text exposition format 0.0.4",
            content: { "text/plain": { schema: { type: "string" } } },
          },
        },
        handler: async () => ({
          headers: { "content-type": metrics.contentType },
          body: await metrics.text(),
        }),
      }),
    );
    let server: Server | undefined;
    if (plan) {
      hooks.daemon.ready.tap(async () => {
        server = await startListener(plan, metrics, (err) =>
          log.warn("metrics could not be read", { error: String(err) }),
        );
        log.info("metrics listener started", {
          listen: `${plan.host}:${plan.port}`,
          token: Boolean(plan.token),
        });
      });
    }
    hooks.daemon.close.tap(async () => {
      stop();
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    });
  },
});
