/**
 * The budgets' reservations (README "Budgets"): before a model call, its worst case is reserved on
 * every line of every budget that applies (global, the fighter's, the gorilla's or channel's of the
 * bout's origin; daily and monthly; money and tokens) in one call to the bus's counters, which
 * reserve on all or none. A line has room while spent + reserved < limit, so concurrent calls pass a
 * limit by at most one call's worst case. After the call its real cost replaces the reservation (one
 * more call); a failed call releases it. A counter the bus does not hold yet is seeded from the
 * usage ledger (what the period's calls cost so far), so a restart, even kill -9, forgets nothing
 * that was recorded. Over a limit the turn stops with BUDGET_EXCEEDED, or, with on_exceed = "ask",
 * waits for an operator's answer (the approvals plugin, `spend.ask`): approved, the turn may go on
 * past its budgets to its end.
 */
import { randomUUID } from "node:crypto";
import {
  type BudgetCounters,
  type BudgetEventFields,
  type BudgetLine,
  type BudgetRule,
  type EventBus,
  type Logger,
  type RingServices,
  SparError,
  type SpendFigures,
  type SpendHold,
  type SpendRequest,
} from "../../sdk/index.js";
import type { PeriodMarks } from "./marks.js";
import type { Period } from "./periods.js";
import { budgetName, LIMITS, type LimitName } from "./rules.js";

/** A counter lives a day past its period, for the nodes whose clocks lag. */
const GRACE_MS = 86_400_000;
/** The most turns whose approved overrun is remembered. */
const APPROVED_KEPT = 1000;

export interface Line extends BudgetLine {
  budget: string;
  rule: BudgetRule;
  limitName: LimitName;
  unit: "money" | "tokens";
  period: Period;
  /** Spend at which `budget.warning` is published (0: never). */
  warn: number;
}

export interface SpendDeps {
  currency: string;
  warnAtPercent: number;
  marks: PeriodMarks;
  counters: () => BudgetCounters;
  spent: RingServices["spend"]["spent"];
  events: EventBus;
  log: Logger;
  /** A channel-origin turn was stopped by a budget: its chat is told (once per budget and period). */
  stopped?: (request: SpendRequest, fields: BudgetEventFields, key: string) => void;
}

/** A line's figure as people read it: money in currency units (decimal), tokens as integers. */
export const shown = (unit: "money" | "tokens", amount: number) =>
  unit === "money" ? amount / 1_000_000 : amount;

export function createSpend(deps: SpendDeps) {
  const { events, log } = deps;
  const approved = new Set<string>();
  const flagged = new Set<string>();
  /** Every budget a call has met since the start, for the view (gorillas' are known only so). */
  const seen = new Map<string, BudgetRule>();

  function flagOnce(key: string, message: string, fields: Record<string, unknown>): void {
    if (flagged.has(key)) return;
    flagged.add(key);
    log.warn(message, fields);
  }

  /** The lines of the rules for a call whose worst case is `worst`, in their current periods. */
  async function linesOf(rules: readonly BudgetRule[], worst: SpendFigures | undefined, model: string) {
    const lines: Line[] = [];
    for (const rule of rules) {
      seen.set(rule.key, rule);
      for (const limit of LIMITS) {
        const value = rule.limits[limit.name];
        if (value === undefined) continue;
        if (limit.unit === "money" && worst && worst.cost_micros === null) {
          flagOnce(
            `${model}:${rule.key}`,
            "budgets: an unpriced model's calls pass money budgets uncounted",
            {
              model,
              budget: budgetName(rule, limit.name),
              hint: "price it in [[pricing]] to count it; token budgets still count it",
            },
          );
          continue;
        }
        const period = await deps.marks.of(limit.period);
        const limitAmount = limit.unit === "money" ? Math.round(value * 1_000_000) : Math.round(value);
        lines.push({
          key: `${rule.key}:${limit.name}:${period.key}`,
          limit: limitAmount,
          amount: worst ? ((limit.unit === "money" ? worst.cost_micros : worst.tokens) ?? 0) : 0,
          expires_at: period.resets_at + GRACE_MS,
          budget: budgetName(rule, limit.name),
          rule,
          limitName: limit.name,
          unit: limit.unit,
          period,
          warn: Math.ceil((limitAmount * deps.warnAtPercent) / 100),
        });
      }
    }
    return lines;
  }

  /** What the ledger holds for a budget since `since`: its one filter's sum, or its filters' summed. */
  async function spentOf(rule: BudgetRule, since: string): Promise<{ cost_micros: number; tokens: number }> {
    if (!rule.ledgers) return deps.spent({ ...rule.ledger, since });
    const total = { cost_micros: 0, tokens: 0 };
    for (const filter of await rule.ledgers(since)) {
      const spent = await deps.spent({ ...filter, since });
      total.cost_micros += spent.cost_micros;
      total.tokens += spent.tokens;
    }
    return total;
  }

  /** What the ledger holds for each line's budget since its period began: the counters' seeds. */
  async function seed(lines: Line[], missing: readonly string[]): Promise<void> {
    const reads = new Map<string, Promise<{ cost_micros: number; tokens: number }>>();
    for (const line of lines) {
      if (!missing.includes(line.key)) continue;
      const at = new Date(line.period.starts_at).toISOString();
      const read = `${line.rule.key}:${at}`;
      if (!reads.has(read)) reads.set(read, spentOf(line.rule, at));
      const spent = await reads.get(read);
      line.seed = line.unit === "money" ? (spent?.cost_micros ?? 0) : (spent?.tokens ?? 0);
    }
  }

  async function reserveLines(id: string, lines: Line[]) {
    let verdict = await deps.counters().reserve(id, lines);
    if (!verdict.ok && "missing" in verdict) {
      await seed(lines, verdict.missing);
      verdict = await deps.counters().reserve(id, lines);
    }
    if (!verdict.ok && "missing" in verdict) {
      throw new SparError("INTERNAL", `budget counters missing after seeding: ${verdict.missing.join(", ")}`);
    }
    return verdict;
  }

  function fieldsOf(line: Line, spent: number): BudgetEventFields {
    return {
      budget: line.budget,
      limit: shown(line.unit, line.limit),
      spent: shown(line.unit, spent),
      unit: line.unit,
      currency: deps.currency,
      resets_at: new Date(line.period.resets_at).toISOString(),
    };
  }

  /** A line had no room: the turn stops, or (on_exceed = "ask") goes on once an operator approves. */
  async function overBudget(request: SpendRequest, line: Line, spent: number): Promise<void> {
    const fields = fieldsOf(line, spent);
    const asking = line.rule.limits.on_exceed === "ask";
    const ids = { fighter_id: request.fighter.id, turn_id: request.turn_id, origin: request.origin };
    events.publish({ kind: "budget.exceeded", ...fields, ...ids, action: asking ? "asked" : "stopped" });
    const figure = (n: number) => (line.unit === "money" ? `${n} ${deps.currency}` : `${n} tokens`);
    const state = `${figure(fields.spent)} of ${figure(fields.limit)} spent; it resets at ${fields.resets_at}`;
    if (asking) {
      const answer = await request.ask({
        subject: `a model call past the budget ${line.budget}`,
        why: `the budget ${line.budget} is used up (${state}); approving lets this turn go past it to its end`,
      });
      if (answer === "approved") {
        approved.add(request.turn_id);
        if (approved.size > APPROVED_KEPT) approved.delete(approved.values().next().value as string);
        return;
      }
      if (answer === "cancelled") request.signal?.throwIfAborted();
    }
    if (request.origin.startsWith("channel:")) deps.stopped?.(request, fields, line.key);
    throw new SparError(
      "BUDGET_EXCEEDED",
      `the budget ${line.budget} is used up: ${state}${asking ? " (the overrun was not approved)" : ""}`,
      { ...fields },
    );
  }

  function holdOf(id: string, lines: Line[], request: SpendRequest): SpendHold {
    const keys = lines.map((l) => l.key);
    return {
      async settle(figures, reported) {
        if (!reported) {
          flagOnce(
            `usage:${request.model.provider}:${request.model.model}`,
            "budgets: a provider reported no usage: its calls are charged their worst case",
            {
              provider: request.model.provider,
              model: request.model.model,
            },
          );
        }
        const amounts = lines.map((l) => (l.unit === "money" ? (figures.cost_micros ?? 0) : figures.tokens));
        const crossed = await deps.counters().settle(
          id,
          keys,
          amounts,
          lines.map((l) => l.warn),
        );
        if (crossed.length === 0) return;
        const now = await deps.counters().read(crossed.map((i) => keys[i] as string));
        for (const [n, i] of crossed.entries()) {
          const line = lines[i] as Line;
          const spent = now[n]?.spent ?? line.warn;
          events.publish({
            kind: "budget.warning",
            ...fieldsOf(line, spent),
            percent: line.limit > 0 ? Math.floor((spent * 100) / line.limit) : 100,
          });
        }
      },
      release: () => deps.counters().release(id, keys),
    };
  }

  return {
    /** Reserves the call's worst case on every line, or refuses it: the `spend.reserve` tap. */
    async reserve(request: SpendRequest): Promise<SpendHold | undefined> {
      const worst = request.worst();
      const lines = await linesOf(request.rules, worst, `${request.model.provider}/${request.model.model}`);
      if (lines.length === 0) return undefined;
      const id = randomUUID();
      const force = approved.has(request.turn_id);
      for (const line of lines) line.force = force;
      const verdict = await reserveLines(id, lines);
      if (!verdict.ok) {
        await overBudget(request, lines[verdict.index] as Line, verdict.spent);
        for (const line of lines) line.force = true;
        await reserveLines(id, lines);
      }
      return holdOf(id, lines, request);
    },
    /** The lines of these rules now, for the view (spent and reserved read by the caller). */
    linesOf: (rules: readonly BudgetRule[]) => linesOf(rules, undefined, ""),
    seen: () => [...seen.values()],
    seed,
  };
}

export type Spend = ReturnType<typeof createSpend>;
