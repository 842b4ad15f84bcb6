/**
 * Budgets (issue 31, item 2; README "Budgets"): the `spend` hooks' budgets plugin. It adds the
 * budgets config.toml and the fighter's manifest give to each model call (`spend.budgets`), reserves
 * the call's worst case against them on the bus's counters (`spend.reserve`, spend.ts), and shows
 * them (`GET /api/v1/budgets`). Nothing is read or written for a call no budget applies to.
 */
import { definePlugin, isSparError } from "../../sdk/index.js";
import { createPeriodMarks } from "./marks.js";
import { checkTimeZone, machineTimeZone } from "./periods.js";
import { addBudgetRoutes } from "./routes.js";
import { type BudgetsSettings, checkSettings, configuredRules } from "./rules.js";
import { createSpend } from "./spend.js";

export default definePlugin<{ budgets: BudgetsSettings }>({
  id: "policy-budgets",
  apply({ hooks, ring, data, events, log }, { budgets: settings }) {
    checkSettings(settings);
    // A zone config.toml names is checked at start; the machine's is looked up when a call first
    // meets a budget, so a daemon without budgets never loads the zones' data (~8 MiB of ICU).
    if (settings.time_zone !== undefined) checkTimeZone(settings.time_zone);
    let zone: string | undefined;
    const timeZone = () => (zone ??= checkTimeZone(settings.time_zone ?? machineTimeZone()));
    const marks = createPeriodMarks(data, timeZone, Date.now);
    const notices = data.notices;
    const spend = createSpend({
      currency: settings.currency,
      warnAtPercent: settings.warn_at_percent,
      marks,
      counters: () => ring.spend.counters(),
      spent: (filter) => ring.spend.spent(filter),
      events,
      log,
      // The chat a stopped turn came from is told once per budget and period (the insert decides).
      stopped(request, fields, key) {
        const [, platform, ...rest] = request.origin.split(":");
        const chat = rest.join(":");
        if (!platform || !chat || !notices) return;
        void (async () => {
          try {
            await notices.insert({ id: key, budget: fields.budget, chat, at: new Date().toISOString() });
          } catch (err) {
            if (isSparError(err, "CONFLICT")) return;
            throw err;
          }
          const adapter = await ring.channels.resolve(platform);
          const spent =
            fields.unit === "money" ? `${fields.spent} ${fields.currency}` : `${fields.spent} tokens`;
          const limit =
            fields.unit === "money" ? `${fields.limit} ${fields.currency}` : `${fields.limit} tokens`;
          await adapter?.send(
            `The budget ${fields.budget} is used up (${spent} of ${limit}): no more replies here until ${fields.resets_at}.`,
            chat,
          );
        })().catch((err: unknown) =>
          log.warn("budgets: could not tell a channel its budget is used up", { error: String(err) }),
        );
      },
    });
    hooks.spend.budgets.tap((rules, context) => {
      const own = configuredRules(settings, context);
      return own.length === 0 ? rules : [...rules, ...own];
    });
    hooks.spend.reserve.tap((request) => spend.reserve(request));
    hooks.arena.routes.tap((routes) =>
      addBudgetRoutes(routes, { settings, spend, ring, counters: () => ring.spend.counters() }),
    );
  },
});
