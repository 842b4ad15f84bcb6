/**
 * `GET /api/v1/usage` (issue 31 item 4): the usage ledger summed per day, model, fighter, origin or
 * provider over a range (`ring.usage.report`, lib/usage-report.ts), the body `spar usage --json`
 * prints and the dashboard's usage view draws. A read key's route (access.ts: GETs need `read`).
 */
import type { FastifyInstance } from "fastify";
import type { RingServices, UsageReportRequest } from "../../sdk/index.js";

const text = (description: string, maxLength = 200) =>
  ({ type: "string", minLength: 1, maxLength, description }) as const;

const usageQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    fighter: text("a fighter's id or name: its calls only"),
    since: text(
      "`<n>d` (the last n days, today included), a date (YYYY-MM-DD, from its midnight) or an instant; default 30d",
      40,
    ),
    until: text("a date (through its end) or an instant (excluded); default the end of today", 40),
    by: {
      enum: ["day", "model", "fighter", "origin", "origin-exact", "provider"],
      description:
        "the grouping (default day): `origin` groups by kind (channel, gorilla, troop-task, fighter, schedule, user), `origin-exact` by origin (channel:telegram:42)",
    },
    origin: text("an origin (channel:telegram:42) or a kind (channel): its calls only", 300),
    provider: text("a provider's id: its calls only"),
    model: text("a model: its calls only"),
    tz: text("the time zone days turn in (an IANA name); default the machine's", 100),
  },
} as const;

const figures = {
  requests: { type: "integer", description: "model calls" },
  input_tokens: { type: "integer", description: "prompt tokens, cached and cache-write ones included" },
  output_tokens: { type: "integer" },
  cached_tokens: { type: "integer", description: "input tokens read from the provider's prompt cache" },
  cache_write_tokens: { type: "integer", description: "input tokens written to the provider's prompt cache" },
  cost: {
    type: ["number", "null"],
    description: "what the priced calls cost, in currency units; null when none was priced",
  },
  currency: { type: "string" },
  unpriced_requests: { type: "integer", description: "calls of a model without a price, not in cost" },
} as const;
const figureNames = Object.keys(figures);

const usageResponse = {
  type: "object",
  additionalProperties: false,
  required: ["usage", "total"],
  properties: {
    usage: {
      type: "array",
      description: "a row per group with at least one call, ordered by key",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["key", ...figureNames],
        properties: {
          key: {
            type: "string",
            description:
              "the day (YYYY-MM-DD), provider/model, fighter name (a killed fighter's id), origin or origin kind, or provider",
          },
          ...figures,
        },
      },
    },
    total: { type: "object", additionalProperties: false, required: figureNames, properties: figures },
  },
} as const;

export function usageRoutes(ring: RingServices) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: UsageReportRequest }>(
      "/usage",
      {
        schema: {
          operationId: "getUsage",
          summary: "The usage ledger summed by day, model, fighter, origin or provider",
          querystring: usageQuery,
          response: { 200: { title: "UsageReport", ...usageResponse } },
        },
      },
      async (request) => ring.usage.report(request.query),
    );
  };
}
