/**
 * W3C trace context on the API (README "Metrics and traces"): each route's handler runs in the trace
 * an incoming `traceparent` names, so the turn it starts is that trace's child. A wrapper added to
 * every route as it is registered; it costs one check per request while nothing observes.
 */
import type { FastifyInstance, RouteHandlerMethod } from "fastify";
import { observing, withIncoming } from "../../sdk/index.js";

export function acceptTraceContext(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    // A WebSocket route's handler is @fastify/websocket's to wrap; its frames are not requests.
    if ((route as { websocket?: boolean }).websocket) return;
    const handler = route.handler as RouteHandlerMethod;
    route.handler = function traced(this: FastifyInstance, request, reply) {
      if (!observing()) return handler.call(this, request, reply);
      return withIncoming(request.headers, () => handler.call(this, request, reply));
    } as RouteHandlerMethod;
  });
}
