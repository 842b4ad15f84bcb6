/**
 * Which budgets apply to a call, from config.toml's `[budgets]` (the global budget and the channel
 * platforms') and the fighter's manifest (`budget`); GORILLA.toml's `[budget]` is added by the
 * gorilla runtime (lib/gorillas/plugin.ts). A budget's limits become lines: one per limit given,
 * each the counter of that limit in its current period.
 */
import {
  type BudgetLimits,
  type BudgetRule,
  badBudgetKey,
  SparError,
  type SpendContext,
} from "../../sdk/index.js";
import type { PeriodKind } from "./periods.js";

/** The `[budgets]` table, as its schema (plugin.json) and its defaults leave it. */
export interface BudgetsSettings {
  currency: "USD";
  time_zone?: string;
  warn_at_percent: number;
  global?: BudgetLimits;
  channels?: Record<string, BudgetLimits>;
}

/** The four limits a budget may give: the period and unit of each. */
export const LIMITS = [
  { name: "daily", period: "daily", unit: "money" },
  { name: "monthly", period: "monthly", unit: "money" },
  { name: "daily_tokens", period: "daily", unit: "tokens" },
  { name: "monthly_tokens", period: "monthly", unit: "tokens" },
] as const satisfies readonly { name: keyof BudgetLimits; period: PeriodKind; unit: "money" | "tokens" }[];

export type LimitName = (typeof LIMITS)[number]["name"];

const given = (limits: BudgetLimits | undefined): limits is BudgetLimits =>
  limits !== undefined && LIMITS.some((l) => limits[l.name] !== undefined);

/** Refuses a limit that is not a finite number in bounds (TOML's nan), naming the key. */
export function checkSettings(settings: BudgetsSettings): void {
  const tables: [string, BudgetLimits | undefined][] = [
    ["budgets.global", settings.global],
    ...Object.entries(settings.channels ?? {}).map(
      ([p, l]) => [`budgets.channels.${p}`, l] as [string, BudgetLimits],
    ),
  ];
  for (const [path, limits] of tables) {
    const bad = limits && badBudgetKey(limits as Record<string, unknown>);
    if (bad) {
      throw new SparError("CONFIG_INVALID", `config.toml: "${path}.${bad}" must be a finite number from 0`, {
        path: `${path}.${bad}`,
      });
    }
  }
}

/** The budgets config.toml and the fighter's manifest put on a call of this turn. */
export function configuredRules(settings: BudgetsSettings, context: SpendContext): BudgetRule[] {
  const rules: BudgetRule[] = [];
  if (given(settings.global)) {
    rules.push({ scope: "global", name: null, key: "global", limits: settings.global, ledger: {} });
  }
  const own = context.fighter.manifest.budget;
  if (given(own)) {
    rules.push({
      scope: "fighter",
      name: context.fighter.name,
      key: `fighter:${context.fighter.id}`,
      limits: own,
      ledger: { fighter_id: context.fighter.id },
    });
  }
  const [kind, platform] = context.origin.split(":");
  const channel = kind === "channel" && platform ? settings.channels?.[platform] : undefined;
  if (platform && given(channel)) {
    rules.push({
      scope: "channel",
      name: platform,
      key: `channel:${platform}`,
      limits: channel,
      ledger: { origin_prefix: `channel:${platform}:` },
    });
  }
  return rules;
}

/** A budget as the API and events name it: `fighter:ada:daily`, `global:monthly_tokens`. */
export function budgetName(rule: Pick<BudgetRule, "scope" | "name">, limit: LimitName): string {
  return rule.name === null ? `${rule.scope}:${limit}` : `${rule.scope}:${rule.name}:${limit}`;
}
