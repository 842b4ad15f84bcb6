import type { CommandSpec } from "../command-spec.js";
import { as, PAGE_LIMIT } from "./shared.js";

/** Work that runs by itself: gorillas and scheduled messages. */
export const GORILLAS: CommandSpec[] = [
  {
    name: "gorilla",
    summary: "Gorillas: autonomous fighters on a schedule (GORILLA.toml), caged until unleashed",
    actions: [
      { name: "list", args: "", summary: "Every gorilla, its state, schedule, next and last run" },
      { name: "status", args: "<name>", summary: "One gorilla: state, schedule, budgets, moves, last run" },
      {
        name: "unleash",
        args: "<name>",
        summary: "Fire it on its schedule from now on (kept across restarts)",
      },
      { name: "cage", args: "<name>", summary: "Stop its schedule; a running cycle is aborted" },
      { name: "run", args: "<name>", summary: "Run one cycle now, caged or not; prints the run id" },
      {
        name: "reload",
        args: "",
        summary:
          "Re-read the gorilla folders: new and mended files load, every problem shown (exit 1 if any)",
      },
      {
        name: "runs",
        args: "<name>",
        summary: "Its runs, newest first: trigger, outcome, time, tokens, result or error",
        options: [
          {
            flag: "--limit",
            value: "n",
            integer: PAGE_LIMIT,
            summary: "At most this many runs (default 20)",
          },
          { flag: "--before", value: "run-id", summary: "The page after this run" },
        ],
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/gorilla.js")).gorilla(action, args[0], as(options)),
  },
  {
    name: "schedule",
    summary: "Scheduled messages: what fighters scheduled for themselves (schedule_add)",
    actions: [
      { name: "list", args: "", summary: "Every fighter's schedules: id, fighter, next run, cron, message" },
      { name: "remove", args: "<id>", summary: "Remove a schedule, whichever fighter holds it" },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/schedule.js")).schedule(action, args[0], as(options)),
  },
];

/** Troops and their tasks. */
export const TROOPS: CommandSpec[] = [
  {
    name: "troop",
    summary: "Troops: several fighters working on one task under a strategy",
    actions: [
      {
        name: "create",
        args: "<name>",
        summary: "Form a troop of existing fighters (names or ids)",
        options: [
          { flag: "--leader", value: "fighter", summary: "Decomposes, synthesizes and breaks ties" },
          { flag: "--members", value: "a,b,c", summary: "The workers, in order, separated by commas" },
          {
            flag: "--strategy",
            value: "name",
            summary: "pipeline, broadcast, consensus, leader_worker, round_robin or specialist",
          },
        ],
      },
      {
        name: "edit",
        args: "<troop>",
        summary: "Change a troop's name, leader, members or strategy (replace a killed member)",
        options: [
          { flag: "--name", value: "name", summary: "Its new name" },
          { flag: "--leader", value: "fighter", summary: "The new leader" },
          { flag: "--members", value: "a,b,c", summary: "The new members, in order (the whole list)" },
          { flag: "--strategy", value: "name", summary: "The new strategy" },
        ],
      },
      { name: "list", args: "", summary: "Every troop: strategy, leader, members" },
      {
        name: "show",
        args: "<troop> [task-id]",
        summary:
          "One troop and its latest tasks; with a task id, that task's status, result, steps and votes",
      },
      {
        name: "task",
        args: "<troop> <task>",
        summary: "Give the troop a task and wait for its result; exits 1 unless it completed",
        options: [{ flag: "--async", summary: "Return at once with the task id (follow it with tasks)" }],
      },
      {
        name: "tasks",
        args: "<troop>",
        summary: "Its tasks, newest first: status, strategy, time, task",
        options: [
          {
            flag: "--limit",
            value: "n",
            integer: PAGE_LIMIT,
            summary: "At most this many tasks (default 20)",
          },
        ],
      },
      { name: "cancel", args: "<troop> <task-id>", summary: "Cancel a pending or running task" },
      {
        name: "disband",
        args: "<troop>",
        summary: "Remove the troop and its tasks; running ones are cancelled",
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/troop.js")).troop(action, args, as(options)),
  },
];
