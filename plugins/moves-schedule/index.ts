/**
 * `schedule_add`, `schedule_list`, `schedule_remove` (capability `schedule`): a fighter schedules
 * messages to itself, once or on a cron expression. Schedules live in this plugin's own collection
 * (schedules.ts) and survive restarts; runner.ts sends each when it is due, as a new turn in the
 * fighter's latest bout of origin `schedule` (never a user's conversation).
 */

import { randomUUID } from "node:crypto";
import { definePlugin, type MoveHandler, refuseLasting, SparError } from "../../sdk/index.js";
import { FREE_OBJECT, openAnswer } from "../../sdk/kits/http.js";
import { createScheduleRunner } from "./runner.js";
import { createSchedules, type ScheduleRecord } from "./schedules.js";
import { firstRun } from "./when.js";

export default definePlugin({
  id: "moves-schedule",
  apply({ hooks, ring, log, data }) {
    const schedules = createSchedules(data, ring);
    const runner = createScheduleRunner({ ring, schedules, log });
    const view = (s: ScheduleRecord) => ({
      id: s.id,
      message: s.message,
      next_run_at: s.next_run_at,
      ...(s.cron ? { cron: s.cron, timezone: s.timezone ?? "UTC" } : {}),
      ...(s.last_run_at ? { last_run_at: s.last_run_at, last_status: s.last_status } : {}),
    });

    const fighterNames = async () => new Map((await ring.fighters.list()).map((f) => [f.id, f.name]));

    const handlers: Record<string, MoveHandler> = {
      schedule_add: {
        name: "schedule_add",
        async run(input, { fighter, callers }) {
          refuseLasting("schedule_add", callers);
          const when = firstRun(input, new Date());
          const record: ScheduleRecord = {
            id: randomUUID(),
            fighter_id: fighter.id,
            message: String(input.message),
            next_run_at: when.next.toISOString(),
            created_at: new Date().toISOString(),
            ...(when.cron ? { cron: when.cron } : {}),
            ...(when.timezone ? { timezone: when.timezone } : {}),
          };
          await schedules.add(record);
          await runner.changed();
          return view(record);
        },
      },
      schedule_list: {
        name: "schedule_list",
        async run(_input, { fighter }) {
          return { schedules: (await schedules.list(fighter.id)).map(view) };
        },
      },
      schedule_remove: {
        name: "schedule_remove",
        async run(input, { fighter }) {
          const id = String(input.id);
          if (!(await schedules.remove(id, fighter.id))) {
            throw new SparError("NOT_FOUND", `you have no schedule with id ${id}`);
          }
          await runner.changed();
          return { removed: id };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
    // Every fighter's schedules, for the operator (`spar schedule list`, the dashboard, and
    // `spar security audit`, which lists them as scheduled jobs), who may remove any of them.
    hooks.arena.routes.tap((routes) => {
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/schedules",
        operationId: "listSchedules",
        summary: "List every fighter's schedules",
        response: { "200": openAnswer({ schedules: { type: "array", items: FREE_OBJECT } }) },
        handler: async () => {
          const all = await schedules.list();
          const names = await fighterNames();
          return {
            body: {
              schedules: all.map((s) => ({
                fighter_id: s.fighter_id,
                fighter: names.get(s.fighter_id) ?? s.fighter_id,
                ...view(s),
              })),
            },
          };
        },
      });
      routes.add({
        listener: "api",
        method: "DELETE",
        path: "/api/v1/schedules/:id",
        operationId: "removeSchedule",
        summary: "Remove a schedule",
        response: {
          "200": openAnswer({
            removed: { type: "string" },
            fighter_id: { type: "string" },
            fighter: { type: "string" },
          }),
        },
        handler: async (request) => {
          const id = request.params.id ?? "";
          const found = await schedules.get(id);
          if (!found || !(await schedules.remove(id)))
            throw new SparError("NOT_FOUND", `no schedule with id ${JSON.stringify(id.slice(0, 80))}`);
          await runner.changed();
          const fighter = (await fighterNames()).get(found.fighter_id) ?? found.fighter_id;
          return { body: { removed: id, fighter_id: found.fighter_id, fighter } };
        },
      });
    });
    hooks.daemon.ready.tap(async () => {
      await runner.start();
    });
    hooks.daemon.close.tap(async () => {
      await runner.stop();
    });
  },
});
