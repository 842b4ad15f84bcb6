/**
 * Every `spar` command, as data: its arguments, options and, for a noun, its actions. The parser's
 * errors (unknown command, unknown action, a missing argument, an option that does not belong) and
 * `--help` both read this one list, so they cannot disagree. A command's code is imported only when
 * it runs: nothing here imports a command module, which keeps `--help` and `--version` fast.
 *
 * New commands follow the same shape: `spar <noun> <action> [args] [options]`, one entry per noun.
 */

import type { CommandSpec, OptionSpec, ParsedOptions } from "./command-spec.js";

const FIGHTER: OptionSpec = {
  flag: "--fighter",
  value: "name|id",
  summary: "The fighter",
  default: "spar",
};

/**
 * The parser types every option as declared, so a command may read its options as its own shape.
 * This is the one place that says so.
 */
const as = <T>(options: ParsedOptions) => options as unknown as T;

/** `--limit` of the paged lists: lib/paging.ts's bounds, which the daemon holds as well. */
const PAGE_LIMIT = { min: 1, max: 500 };

export const COMMANDS: CommandSpec[] = [
  {
    name: "init",
    summary: "Create the data dir, config.toml, master key and CLI key pair (only what is missing)",
    options: [
      {
        flag: "--fresh",
        summary:
          "Move a database that cannot be opened aside (spar.db.unreadable-<time>, nothing deleted) and start afresh",
      },
    ],
    run: async ({ options }) => (await import("./commands/init.js")).init(as(options)),
  },
  {
    name: "start",
    summary: "Start the daemon in the foreground (runs init first when needed)",
    options: [{ flag: "--detach", summary: "Run in the background; stop it with spar stop" }],
    run: async ({ options }) => (await import("./commands/start.js")).start(as(options)),
  },
  {
    name: "stop",
    summary: "Stop a daemon started with --detach",
    run: async ({ options }) => (await import("./commands/start.js")).stop(options),
  },
  {
    name: "status",
    summary: "Check that the daemon runs; show its fighters",
    run: async ({ options }) => (await import("./commands/status.js")).status(options),
  },
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
    run: async ({ args, options }) => (await import("./commands/chat.js")).chat(args[0], as(options)),
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
    run: async ({ options }) => (await import("./commands/context.js")).context(as(options)),
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
      (await import("./commands/bout.js")).bout(action, args, as(options)),
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
          kinds: (await import("../lib/fighter-files.js")).templateNames(),
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
      (await import("./commands/fighter.js")).fighter(action, args[0], as(options)),
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
    run: async ({ options }) => (await import("./commands/usage.js")).usage(as(options)),
  },
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
      (await import("./commands/gorilla.js")).gorilla(action, args[0], as(options)),
  },
  {
    name: "schedule",
    summary: "Scheduled messages: what fighters scheduled for themselves (schedule_add)",
    actions: [
      { name: "list", args: "", summary: "Every fighter's schedules: id, fighter, next run, cron, message" },
      { name: "remove", args: "<id>", summary: "Remove a schedule, whichever fighter holds it" },
    ],
    run: async ({ action, args, options }) =>
      (await import("./commands/schedule.js")).schedule(action, args[0], as(options)),
  },
  {
    name: "budgets",
    summary: "Budgets: each limit, what its day or month has spent and holds reserved, when it resets",
    run: async ({ options }) => (await import("./commands/budgets.js")).budgets(options),
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
      (await import("./commands/approvals.js")).approvals(action, args, as(options)),
  },
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
      (await import("./commands/troop.js")).troop(action, args, as(options)),
  },
  {
    name: "channel",
    summary: "Messaging channels (Telegram, Slack, Discord) and the tunnel their webhooks come through",
    actions: [
      {
        name: "setup",
        args: "<platform>",
        summary:
          "Set up telegram, slack or discord: token checked, allowlist, secrets in .env, tunnel, webhook (asks on a terminal)",
        options: [
          {
            flag: "--token",
            value: "token|-",
            summary: "The bot token (- reads it from stdin); default: the saved one",
          },
          { flag: "--allow", value: "id,id", summary: "Who may talk to the bot: the platform's user ids" },
          {
            flag: "--owner",
            value: "id,id|none",
            summary:
              "Whose messages are your own (on the allowlist too); anyone else's taints the turn (default: the saved ones, else none)",
          },
          {
            flag: "--fighter",
            value: "name|id",
            summary: "The fighter that answers (default: the saved one, else spar)",
          },
          {
            flag: "--tunnel",
            value: "quick|named|manual",
            summary: "How platforms reach this machine (default: quick)",
          },
          {
            flag: "--url",
            value: "url",
            summary: "manual: the public URL that forwards to the webhook listener",
          },
          {
            flag: "--name",
            value: "tunnel",
            summary: "named: the tunnel made with cloudflared tunnel create",
          },
          { flag: "--hostname", value: "host", summary: "named: the tunnel's public host name" },
          {
            flag: "--api-root",
            value: "url",
            summary: "The platform's API root (a self-hosted server, a test's fake)",
          },
          { flag: "--signing-secret", value: "secret", summary: "slack: the app's Signing Secret" },
          {
            flag: "--public-key",
            value: "hex",
            summary: "discord: the application's Public Key (default: asked of Discord)",
          },
          {
            flag: "--application-id",
            value: "id",
            summary: "discord: the application id (default: asked of Discord)",
          },
          { flag: "--yes", summary: "Save without asking for confirmation" },
        ],
      },
      {
        name: "list",
        args: "",
        summary: "Every configured channel: connected, fighter, allowlist, messages",
      },
      {
        name: "status",
        args: "<platform>",
        summary:
          "One channel: webhook URL (and whether it is the tunnel's), last inbound, counts, refusals, error",
      },
      {
        name: "remove",
        args: "<platform>",
        summary: "Deregister the webhook (Telegram), remove the channel's table and secrets",
      },
      {
        name: "tunnel",
        args: "",
        summary: "The tunnel's public URL; with --mode, change [tunnel]",
        options: [
          { flag: "--mode", value: "quick|named|manual", summary: "The tunnel to use from the next start" },
          {
            flag: "--url",
            value: "url",
            summary: "manual: the public URL that forwards to the webhook listener",
          },
          {
            flag: "--name",
            value: "tunnel",
            summary: "named: the tunnel made with cloudflared tunnel create",
          },
          { flag: "--hostname", value: "host", summary: "named: the tunnel's public host name" },
        ],
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("./commands/channel.js")).channel(action, args, as(options)),
  },
  {
    name: "key",
    summary: "The public keys allowed to sign requests (a running daemon sees a change at once)",
    actions: [
      {
        name: "add",
        args: "<name> <public-key>",
        summary:
          "Authorize a public key: PEM, base64 of the raw 32 bytes, a file holding either, or - to read it from stdin",
        options: [
          {
            flag: "--scope",
            value: "scope",
            summary:
              "What it may do: admin, operator (all but backups), read (GET only) or chat:<fighter>[,<fighter>…]",
            default: "admin",
          },
        ],
      },
      { name: "list", args: "", summary: "The authorized keys, their fingerprints and scopes" },
      {
        name: "scope",
        args: "<name> <scope>",
        summary: "Change a key's scope: admin, operator, read or chat:<fighter>[,<fighter>…]",
      },
      {
        name: "remove",
        args: "<name>",
        summary: "Stop accepting a key",
        options: [
          {
            flag: "--force",
            summary: 'Remove it even if it is "cli", the key this CLI signs its requests with',
          },
        ],
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("./commands/key.js")).key(action, args, as(options)),
  },
  {
    name: "sign",
    args: "<method> <path> [body]",
    summary: "Print the signature headers for one request (for curl); body - reads stdin",
    options: [
      { flag: "--key", value: "file", summary: "The private key (PEM) to sign with (default: the CLI's)" },
      { flag: "--key-id", value: "name", summary: "The name the key is authorized under (default: cli)" },
    ],
    run: async ({ args, options }) => (await import("./commands/sign.js")).sign(args, as(options)),
  },
  {
    name: "rekey",
    summary: "Rotate the master secret: re-encrypt the database under a new master.key (daemon stopped)",
    options: [{ flag: "--yes", summary: "Go ahead without stopping to explain what it does" }],
    run: async ({ options }) => (await import("./commands/rekey.js")).rekey(as(options)),
  },
  {
    name: "doctor",
    summary: "Check the config, the data dir, the daemon and every configured provider",
    run: async ({ options }) => (await import("./commands/doctor.js")).doctor(options),
  },
  {
    name: "backup",
    args: "<file>",
    summary:
      "Snapshot the encrypted database to <file> (online while the daemon runs) with <file>.manifest.json",
    run: async ({ args, options }) =>
      (await import("./commands/backup.js")).backup(args[0] as string, options),
  },
  {
    name: "restore",
    args: "<file>",
    summary:
      "Replace the database with a backup made by spar backup (daemon stopped; the old one is moved aside)",
    options: [
      { flag: "--yes", summary: "Replace the current database without asking" },
      {
        flag: "--master-key-file",
        value: "path",
        summary:
          "The master secret the backup was made under (e.g. master.key.old-<time> from spar rekey); it is re-encrypted under the current one",
      },
    ],
    run: async ({ args, options }) =>
      (await import("./commands/backup.js")).restore(args[0] as string, as(options)),
  },
  {
    name: "plugin",
    summary: "Plugins, from their manifests (no plugin code runs)",
    actions: [
      {
        name: "list",
        args: "",
        summary: "Every plugin found: its kind, whether it is active (and why not), version and source",
      },
    ],
    run: async ({ options }) => (await import("./commands/plugin.js")).plugin(options),
  },
  {
    name: "move",
    summary: "Tools (moves) and skills",
    actions: [
      {
        name: "list",
        args: "",
        summary: "Every tool with its capability, and every skill, bundled or installed",
      },
      {
        name: "search",
        args: "<query>",
        summary: "Skills and tools ranked by name, tags and description",
        options: [
          {
            flag: "--limit",
            value: "n",
            // GET /api/v1/moves/search's bounds (plugins/moves-skills).
            integer: { min: 1, max: 100 },
            summary: "At most this many results (default 10)",
          },
        ],
      },
      {
        name: "install",
        args: "<source>",
        summary:
          "A bundled skill's name (enables it), a folder, or an https URL to a SKILL.md, .tar.gz or .zip",
        options: [
          {
            flag: "--force",
            summary: "Install despite high-severity scan findings (recorded, shown by security audit)",
          },
          { flag: "--replace", summary: "Replace an installed skill of the same name" },
        ],
      },
      {
        name: "scan",
        args: "<source>",
        summary:
          "Security-scan a skill (name, folder or URL): findings with rule, severity, file and line; exits 1 on high",
      },
      { name: "remove", args: "<name>", summary: "Remove an installed skill, or disable a bundled one" },
    ],
    run: async ({ action, args, options }) =>
      (await import("./commands/move.js")).move(action, args, as(options)),
  },
  {
    name: "security",
    summary: "Security checks of this installation",
    actions: [
      {
        name: "audit",
        args: "",
        summary: "Risky settings, file modes, a weak master key; exits 1 on a high finding",
      },
    ],
    run: async ({ options }) => (await import("./commands/security.js")).security(options),
  },
];
