/**
 * Troop budgets (issue 31; README "Budgets"): a troop's `budget` counts the model calls of its
 * tasks' steps, whose bouts have the origin `troop-task:<task id>`. Which troop a task is of, and
 * its budget then, is looked up once per task (a running task goes on with its troop as it was when
 * it started, its budget included). The ledger's rows of a troop are those of its tasks: a counter
 * is seeded with their sums (`ledgers`), the tasks created since a day before the period began.
 */
import type { BudgetRule, UsageSpentFilter } from "../../sdk/index.js";
import type { TroopData } from "./troop-data.js";

const ORIGIN = "troop-task:";
/** Tasks whose lookups are kept. */
const KEPT = 1000;
/** A task created this long before a period began may still make calls in it (a task's deadline is shorter). */
const TASK_SPAN_MS = 86_400_000;
/** The most tasks of one troop whose rows seed its counter. */
const SEED_TASKS = 10_000;

export function createTroopBudgets(troops: TroopData) {
  const looked = new Map<string, Promise<BudgetRule | undefined>>();

  async function lookup(taskId: string): Promise<BudgetRule | undefined> {
    const task = await troops.tasks.get(taskId);
    const troop = task ? await troops.get(task.troop_id) : undefined;
    if (!troop?.budget) return undefined;
    const troopId = troop.id;
    return {
      scope: "troop",
      name: troop.name,
      key: `troop:${troopId}`,
      limits: troop.budget,
      ledger: { origin: `${ORIGIN}${taskId}` },
      async ledgers(since: string): Promise<UsageSpentFilter[]> {
        const from = new Date(Date.parse(since) - TASK_SPAN_MS).toISOString();
        const tasks = await troops.tasks.list(troopId, { limit: SEED_TASKS });
        return tasks.filter((t) => t.created_at >= from).map((t) => ({ origin: `${ORIGIN}${t.id}` }));
      },
    };
  }

  return {
    /** The budget of the troop whose task started a bout of this origin; undefined for any other. */
    of(origin: string): Promise<BudgetRule | undefined> | undefined {
      if (!origin.startsWith(ORIGIN)) return undefined;
      const taskId = origin.slice(ORIGIN.length);
      let rule = looked.get(taskId);
      if (!rule) {
        rule = lookup(taskId);
        rule.catch(() => looked.delete(taskId));
        looked.set(taskId, rule);
        if (looked.size > KEPT) looked.delete(looked.keys().next().value as string);
      }
      return rule;
    },
  };
}
