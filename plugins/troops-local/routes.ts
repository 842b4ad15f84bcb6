/**
 * The troop routes on the API listener (DESIGN §12), each also answered under `/api/…` by the Arena
 * (the spec's `POST /api/troops` and `POST /api/troops/{id}/tasks`). A troop is named by its id or
 * its name. Lists answer `{troops}` and `{tasks}`.
 */

import { BUDGET_SCHEMA, type RouteRegistry } from "../../sdk/index.js";
import { listOf, PAGE_QUERY, pageOf, record, TROOP_SCHEMA, TROOP_TASK_SCHEMA } from "../../sdk/kits/http.js";
import type { TroopChanges, TroopRuntime } from "./runtime.js";

const BASE = "/api/v1/troops";
/** The longest task text, as for a message. */
const MAX_TASK_CHARS = 100_000;

const fighterRef = { type: "string", minLength: 1, maxLength: 128 };

const CREATE_BODY = {
  type: "object",
  additionalProperties: false,
  required: ["name", "leader", "members", "strategy"],
  properties: {
    name: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" },
    leader: fighterRef,
    members: { type: "array", minItems: 1, items: fighterRef },
    strategy: { type: "string", minLength: 1, maxLength: 64 },
    budget: BUDGET_SCHEMA,
  },
};

/** An edit: what create takes, each optional, at least one. */
const EDIT_BODY = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  properties: CREATE_BODY.properties,
};

const TASK_BODY = {
  type: "object",
  additionalProperties: false,
  required: ["task"],
  properties: {
    task: { type: "string", minLength: 1, maxLength: MAX_TASK_CHARS },
    async: { type: "boolean" },
  },
};

export function addTroopRoutes(routes: RouteRegistry, runtime: TroopRuntime): void {
  routes.add({
    listener: "api",
    method: "POST",
    path: BASE,
    operationId: "createTroop",
    summary: "Form a troop: a leader, members and a strategy",
    response: { "201": TROOP_SCHEMA },
    body: CREATE_BODY,
    handler: async ({ body }) => ({
      status: 201,
      body: await runtime.create(body as Parameters<TroopRuntime["create"]>[0]),
    }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: BASE,
    operationId: "listTroops",
    summary: "List the troops",
    response: { "200": listOf("troops", TROOP_SCHEMA) },
    handler: async () => ({ body: { troops: await runtime.list() } }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id`,
    operationId: "getTroop",
    summary: "Show a troop (by id or name)",
    response: { "200": TROOP_SCHEMA },
    handler: async ({ params }) => ({ body: await runtime.get(params.id as string) }),
  });
  routes.add({
    listener: "api",
    method: "PATCH",
    path: `${BASE}/:id`,
    operationId: "editTroop",
    summary: "Change a troop's name, leader, members, strategy or budget",
    response: { "200": TROOP_SCHEMA },
    body: EDIT_BODY,
    handler: async ({ params, body }) => ({
      body: await runtime.edit(params.id as string, body as TroopChanges),
    }),
  });
  routes.add({
    listener: "api",
    method: "DELETE",
    path: `${BASE}/:id`,
    operationId: "disbandTroop",
    summary: "Disband a troop; its running tasks are cancelled",
    response: {
      "200": record("DisbandedTroop", {
        id: { type: "string" },
        name: { type: "string" },
        disbanded: { const: true },
        cancelled_tasks: { type: "integer" },
      }),
    },
    handler: async ({ params }) => ({ body: await runtime.disband(params.id as string) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/tasks`,
    operationId: "submitTroopTask",
    summary: "Give a troop a task: the answer waits for it to end, or with async: true is 202 at once",
    response: { "200": TROOP_TASK_SCHEMA, "202": TROOP_TASK_SCHEMA },
    body: TASK_BODY,
    // By default the answer waits for the task to end; `async: true` answers 202 with the record to poll.
    handler: async ({ params, body }) => {
      const { task, async } = body as { task: string; async?: boolean };
      const record = await runtime.submit(params.id as string, task, async !== true);
      return { status: async === true ? 202 : 200, body: record };
    },
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id/tasks`,
    operationId: "listTroopTasks",
    summary: "List a troop's tasks, newest first",
    query: PAGE_QUERY,
    response: { "200": listOf("tasks", TROOP_TASK_SCHEMA) },
    handler: async ({ params, query }) => ({
      body: { tasks: await runtime.tasks(params.id as string, pageOf(query, "task")) },
    }),
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id/tasks/:task_id`,
    operationId: "getTroopTask",
    summary: "Show one task of a troop",
    response: { "200": TROOP_TASK_SCHEMA },
    handler: async ({ params }) => ({
      body: await runtime.task(params.id as string, params.task_id as string),
    }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/tasks/:task_id/cancel`,
    operationId: "cancelTroopTask",
    summary: "Cancel a troop's task",
    response: { "200": TROOP_TASK_SCHEMA },
    handler: async ({ params }) => ({
      body: await runtime.cancel(params.id as string, params.task_id as string),
    }),
  });
}
