/**
 * `GET /api/v1/budgets` (a `read` key): every budget known (config.toml's, the fighters' manifests',
 * and those calls have met since the start, a gorilla's among them), one row per limit, with what
 * its current period has spent and holds reserved. A budget whose counter the bus does not hold yet
 * shows the usage ledger's figure (and holds nothing).
 */
import type {
  BudgetCounters,
  BudgetRule,
  BudgetStatus,
  RingServices,
  RouteRegistry,
} from "../../sdk/index.js";
import { BUDGET_STATUS_SCHEMA, listOf } from "../../sdk/kits/http.js";
import { type BudgetsSettings, configuredRules } from "./rules.js";
import { type Line, type Spend, shown } from "./spend.js";

export async function budgetRows(deps: {
  settings: BudgetsSettings;
  spend: Spend;
  ring: Pick<RingServices, "fighters">;
  counters: () => BudgetCounters;
}): Promise<BudgetStatus[]> {
  const rules = new Map<string, BudgetRule>();
  const add = (rule: BudgetRule) => rules.set(rule.key, rule);
  for (const row of await deps.ring.fighters.list()) {
    const fighter = { ...row, manifest: await deps.ring.fighters.manifest(row.id) };
    for (const rule of configuredRules(deps.settings, { fighter, bout_id: "", turn_id: "", origin: "user" }))
      add(rule);
  }
  for (const [platform, limits] of Object.entries(deps.settings.channels ?? {})) {
    add({
      scope: "channel",
      name: platform,
      key: `channel:${platform}`,
      limits,
      ledger: { origin_prefix: `channel:${platform}:` },
    });
  }
  for (const rule of deps.spend.seen()) if (!rules.has(rule.key)) add(rule);
  const lines: Line[] = await deps.spend.linesOf([...rules.values()]);
  const held = await deps.counters().read(lines.map((l) => l.key));
  const missing = lines.filter((_, i) => !held[i]).map((l) => l.key);
  if (missing.length > 0) await deps.spend.seed(lines, missing);
  return lines.map((line, i) => ({
    budget: line.budget,
    scope: line.rule.scope,
    name: line.rule.name,
    period: line.period.kind,
    unit: line.unit,
    limit: shown(line.unit, line.limit),
    spent: shown(line.unit, held[i]?.spent ?? line.seed ?? 0),
    reserved: shown(line.unit, held[i]?.reserved ?? 0),
    currency: deps.settings.currency,
    resets_at: new Date(line.period.resets_at).toISOString(),
    on_exceed: line.rule.limits.on_exceed ?? "stop",
  }));
}

export function addBudgetRoutes(routes: RouteRegistry, deps: Parameters<typeof budgetRows>[0]): void {
  routes.add({
    listener: "api",
    method: "GET",
    path: "/api/v1/budgets",
    operationId: "listBudgets",
    summary: "Every budget's limits, with what the current period spent and holds reserved",
    response: { "200": listOf("budgets", BUDGET_STATUS_SCHEMA) },
    handler: async () => ({ body: { budgets: await budgetRows(deps) } }),
  });
}
