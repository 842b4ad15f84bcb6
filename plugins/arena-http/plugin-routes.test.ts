/**
 * A plugin's `api` route answers a request as the Arena's own routes would: its params and body
 * checked against its schemas, with the same VALIDATION_FAILED (message and path) fastify gives.
 */
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { createErrorHandler } from "./errors.js";
import { createPluginRoutes, runPluginRoute } from "./plugin-routes.js";

const params = {
  type: "object",
  required: ["id"],
  properties: { id: { type: "string", minLength: 1, maxLength: 20 } },
};
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

let app: FastifyInstance;
afterEach(() => app?.close());

async function server(): Promise<FastifyInstance> {
  app = Fastify();
  app.setErrorHandler(createErrorHandler(silent));
  const routes = createPluginRoutes();
  routes.add({
    listener: "api",
    method: "GET",
    path: "/api/v1/plugin/:id/notes",
    params,
    handler: async (request) => ({ body: { id: request.params.id } }),
  });
  // The Arena's own kind of route, with the same params schema, to compare the answers with.
  app.get("/api/v1/own/:id/notes", { schema: { params } }, async (request) => request.params);
  app.get("/api/*", async (request, reply) => {
    const found = routes.find("api", request.method, request.url.split("?")[0] ?? "");
    if (!found) return reply.status(404).send();
    return runPluginRoute(found, request, reply);
  });
  await app.ready();
  return app;
}

describe("plugin routes", () => {
  it("check their params as fastify checks the Arena's, answering the same error", async () => {
    const served = await server();
    const long = "x".repeat(21);
    const plugin = await served.inject({ method: "GET", url: `/api/v1/plugin/${long}/notes` });
    const own = await served.inject({ method: "GET", url: `/api/v1/own/${long}/notes` });
    expect(plugin.statusCode).toBe(400);
    expect(plugin.json()).toEqual(own.json());
    expect(plugin.json()).toEqual({
      error: {
        code: "VALIDATION_FAILED",
        message: '"params.id" must NOT have more than 20 characters',
        path: "/params/id",
      },
    });
    const fine = await served.inject({ method: "GET", url: "/api/v1/plugin/ada/notes" });
    expect(fine.json()).toEqual({ id: "ada" });
  });
});
