/**
 * The gorilla routes on the API listener (DESIGN §6), each also answered under `/api/…` by the
 * Arena. Lists answer `{gorillas, problems}` and `{runs}`; a gorilla's id is its name.
 */
import { type RouteRegistry, SparError } from "../../sdk/index.js";
import {
  GORILLA_LIST_SCHEMA,
  GORILLA_RUN_SCHEMA,
  GORILLA_SCHEMA,
  listOf,
  PAGE_QUERY,
} from "../api-records.js";
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
    operationId: "listGorillas",
    summary: "List the gorillas (scheduled autonomous fighters), and files that failed to load",
    response: { "200": GORILLA_LIST_SCHEMA },
    handler: async () => ({ body: await runtime.list() }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/reload`,
    operationId: "reloadGorillas",
    summary: "Re-read the gorilla folders",
    response: { "200": GORILLA_LIST_SCHEMA },
    handler: async ({ body }) => {
      noBody(body, "");
      return { body: await runtime.reload() };
    },
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id`,
    operationId: "getGorilla",
    summary: "Show a gorilla",
    response: { "200": GORILLA_SCHEMA },
    handler: async ({ params }) => ({ body: await runtime.get(params.id as string) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/unleash`,
    operationId: "unleashGorilla",
    summary: "Unleash a gorilla: it runs on its schedule",
    response: { "200": GORILLA_SCHEMA },
    handler: async ({ params, body }) => ({ body: await runtime.unleash(noBody(body, params.id)) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/cage`,
    operationId: "cageGorilla",
    summary: "Cage a gorilla: it runs no more until unleashed",
    response: { "200": GORILLA_SCHEMA },
    handler: async ({ params, body }) => ({ body: await runtime.cage(noBody(body, params.id)) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/run`,
    operationId: "runGorilla",
    summary: "Run a gorilla's cycle now",
    response: { "201": GORILLA_RUN_SCHEMA },
    // 201 with the run as recorded started: the cycle goes on after the answer.
    handler: async ({ params, body }) => ({ status: 201, body: await runtime.run(noBody(body, params.id)) }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id/runs`,
    operationId: "listGorillaRuns",
    summary: "List a gorilla's runs, newest first",
    query: PAGE_QUERY,
    response: { "200": listOf("runs", GORILLA_RUN_SCHEMA) },
    handler: async ({ params, query }) => ({
      body: { runs: await runtime.runs(params.id as string, pageOf(query, "run")) },
    }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id/runs/:run_id`,
    operationId: "getGorillaRun",
    summary: "Show one run of a gorilla",
    response: { "200": GORILLA_RUN_SCHEMA },
    handler: async ({ params }) => ({
      body: await runtime.runRecord(params.id as string, params.run_id as string),
    }),
  });
}
