import type { CommandSpec } from "../command-spec.js";
import { as, FIGHTER, PAGE_LIMIT } from "./shared.js";

/** Fighters, what they are told and what it costs. */
export const CONVERSATIONS: CommandSpec[] = [
  {
    name: "chat",
    args: "[text]",
    summary: "Send a message to a fighter; it continues the fighter's latest bout unless --new or --bout",
    options: [
      { ...FIGHTER, summary: "The fighter to talk to" },
      { flag: "--new", summary: "Start a new bout (conversation) with this message" },
      {
        flag: "--bout",
        value: "id",
        field: "bout_id",
        summary: "Continue this bout (spar bout list shows them)",
      },
      { flag: "--raw", summary: "Print the model's text as is, terminal control sequences included" },
      {
        flag: "--file",
        value: "path",
        summary: "Send this file's text as the message (- as the text, or a pipe, reads stdin)",
      },
    ],
    run: async ({ args, options }) => (await import("../commands/chat.js")).chat(args[0], as(options)),
  },
  {
    name: "context",
    summary:
      "What a fighter's next prompt holds and costs, part by part (token estimates; a dry run, no model call)",
    options: [
      { ...FIGHTER, summary: "Whose next turn" },
      { flag: "--bout", value: "id", summary: "In this bout (default: the fighter's latest)" },
      {
        flag: "--message",
        value: "text",
        summary: "Prepare it for this message (default: an empty one; skills a message names depend on it)",
      },
    ],
    run: async ({ options }) => (await import("../commands/context.js")).context(as(options)),
  },
  {
    name: "bout",
    summary: "A fighter's bouts (conversations)",
    actions: [
      {
        name: "list",
        args: "",
        summary: "The fighter's bouts with their origin (who started each), the most recently active first",
        options: [
          { ...FIGHTER, summary: "Whose bouts" },
          {
            flag: "--origin",
            value: "origin",
            summary:
              "Only this origin (user, channel:telegram:<chat>, …) or kind (channel, troop-task, gorilla, …)",
          },
        ],
      },
      {
        name: "show",
        args: "<id>",
        summary: "A bout's messages in order, and how each turn that did not complete ended",
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/bout.js")).bout(action, args, as(options)),
  },
  {
    name: "fighter",
    summary: "Fighters",
    actions: [
      {
        name: "spawn",
        args: "<kind>",
        summary: "Spawn a fighter of a bundled kind",
        options: [{ flag: "--name", value: "name", summary: "Its name (default: the kind)" }],
        more: async () => ({
          kinds: (await import("../../lib/fighter-files.js")).templateNames(),
        }),
      },
      { name: "list", args: "", summary: "Every fighter, its state and model" },
      {
        name: "usage",
        args: "<name|id>",
        summary: "What a fighter spent per model: calls, tokens (cached ones too) and cost, or unpriced",
      },
      {
        name: "kill",
        args: "<name|id>",
        summary: "Stop a fighter and remove it (warns when a troop loses it: spar troop edit mends that)",
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/fighter.js")).fighter(action, args[0], as(options)),
  },
  {
    name: "usage",
    summary: "Where the tokens go: calls, tokens and cost per day, model, fighter, origin or provider",
    options: [
      { flag: "--fighter", value: "name|id", summary: "One fighter's calls only" },
      {
        flag: "--by",
        value: "day|model|fighter|origin|origin-exact|provider",
        summary: "Group by this (origin: by kind; origin-exact: each chat, gorilla, task …)",
        default: "day",
      },
      {
        flag: "--since",
        value: "date|<n>d",
        summary: "From this date (YYYY-MM-DD), instant, or the last n days (7d, 30d)",
        default: "30d",
      },
      { flag: "--until", value: "date", summary: "Through this date (YYYY-MM-DD), or up to an instant" },
      { flag: "--tz", value: "zone", summary: "The time zone days turn in (default: the daemon machine's)" },
      { flag: "--origin", value: "origin", summary: "One origin (channel:telegram:42) or kind (channel)" },
      { flag: "--provider", value: "id", summary: "One provider's calls only" },
      { flag: "--model", value: "model", summary: "One model's calls only" },
      { flag: "--csv", summary: "RFC 4180 CSV with a header row, the total last" },
    ],
    run: async ({ options }) => (await import("../commands/usage.js")).usage(as(options)),
  },
];

/** What bounds a fighter's work: budgets and approvals. */
export const OVERSIGHT: CommandSpec[] = [
  {
    name: "budgets",
    summary: "Budgets: each limit, what its day or month has spent and holds reserved, when it resets",
    run: async ({ options }) => (await import("../commands/budgets.js")).budgets(options),
  },
  {
    name: "approvals",
    summary: "Approvals: calls waiting for an operator's answer (shell, new chats, spawns …), and the rules",
    actions: [
      {
        name: "list",
        args: "",
        summary: "Requests, newest first (default: pending): id, fighter, move, what, why, expiry",
        options: [
          {
            flag: "--status",
            value: "status",
            summary: "pending, approved, denied, expired, cancelled or all",
            default: "pending",
          },
          { flag: "--limit", value: "n", integer: PAGE_LIMIT, summary: "At most this many (default 20)" },
        ],
      },
      {
        name: "show",
        args: "<id>",
        summary: "One request: the exact call, its folder and files, why, the answer",
      },
      {
        name: "approve",
        args: "<id>",
        summary: "Let the call run (once: exactly that call, if its files are unchanged)",
        options: [
          {
            flag: "--always",
            summary: "Also allow this fighter this exact call from now on (a stored rule)",
          },
          {
            flag: "--pattern",
            value: "glob",
            summary: "With --always: allow calls whose main argument matches the glob instead (git *)",
          },
        ],
      },
      {
        name: "deny",
        args: "<id>",
        summary: "Refuse the call; the model is told, with the reason",
        options: [{ flag: "--reason", value: "text", summary: "Why (the model reads it)" }],
      },
      {
        name: "rules",
        args: "[list|remove] [rule-id]",
        summary:
          "The rules: config.toml's [[approvals.rules]] and those --always stored; remove <rule-id> drops a stored one",
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/approvals.js")).approvals(action, args, as(options)),
  },
];
