/**
 * The gorilla routes on the API listener (DESIGN §6), each also answered under `/api/…` by the
 * Arena. Lists answer `{gorillas, problems}` and `{runs}`; a gorilla's id is its name.
 */
import { type RouteRegistry, SparError } from "../../sdk/index.js";
import { pageOf } from "../paging.js";
import type { GorillaRuntime } from "./runtime.js";

const BASE = "/api/v1/gorillas";

/** The actions take no body: none, or `{}`. Returns the gorilla's id. */
function noBody(body: unknown, id: string | undefined): string {
  const empty =
    body === undefined ||
    body === null ||
    (typeof body === "object" && !Array.isArray(body) && Object.keys(body).length === 0);
  if (!empty) throw new SparError("VALIDATION_FAILED", "this action takes no body (send none, or {})");
  return id as string;
}

export function addGorillaRoutes(routes: RouteRegistry, runtime: GorillaRuntime): void {
  routes.add({
    listener: "api",
    method: "GET",
    path: BASE,
    handler: async () => ({ body: await runtime.list() }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/reload`,
    handler: async ({ body }) => {
      noBody(body, "");
      return { body: await runtime.reload() };
    },
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id`,
    handler: async ({ params }) => ({ body: await runtime.get(params.id as string) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/unleash`,
    handler: async ({ params, body }) => ({ body: await runtime.unleash(noBody(body, params.id)) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/cage`,
    handler: async ({ params, body }) => ({ body: await runtime.cage(noBody(body, params.id)) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/run`,
    // 201 with the run as recorded started: the cycle goes on after the answer.
    handler: async ({ params, body }) => ({ status: 201, body: await runtime.run(noBody(body, params.id)) }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id/runs`,
    handler: async ({ params, query }) => ({
      body: { runs: await runtime.runs(params.id as string, pageOf(query, "run")) },
    }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id/runs/:run_id`,
    handler: async ({ params }) => ({
      body: await runtime.runRecord(params.id as string, params.run_id as string),
    }),
  });
}
