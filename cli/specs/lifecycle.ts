import type { CommandSpec } from "../command-spec.js";
import { as } from "./shared.js";

/** Starting and stopping the daemon, and whether it runs. */
export const LIFECYCLE: CommandSpec[] = [
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
    run: async ({ options }) => (await import("../commands/init.js")).init(as(options)),
  },
  {
    name: "start",
    summary: "Start the daemon in the foreground (runs init first when needed)",
    options: [{ flag: "--detach", summary: "Run in the background; stop it with spar stop" }],
    run: async ({ options }) => (await import("../commands/start.js")).start(as(options)),
  },
  {
    name: "stop",
    summary: "Stop a daemon started with --detach",
    run: async ({ options }) => (await import("../commands/start.js")).stop(options),
  },
  {
    name: "status",
    summary: "Check that the daemon runs; show its fighters",
    run: async ({ options }) => (await import("../commands/status.js")).status(options),
  },
];

/** The data dir's care: its key, its health, its backups, its plugins. */
export const MAINTENANCE: CommandSpec[] = [
  {
    name: "rekey",
    summary: "Rotate the master secret: re-encrypt the database under a new master.key (daemon stopped)",
    options: [{ flag: "--yes", summary: "Go ahead without stopping to explain what it does" }],
    run: async ({ options }) => (await import("../commands/rekey.js")).rekey(as(options)),
  },
  {
    name: "doctor",
    summary: "Check the config, the data dir, the daemon and every configured provider",
    run: async ({ options }) => (await import("../commands/doctor.js")).doctor(options),
  },
  {
    name: "backup",
    args: "<file>",
    summary:
      "Snapshot the encrypted database to <file> (online while the daemon runs) with <file>.manifest.json",
    run: async ({ args, options }) =>
      (await import("../commands/backup.js")).backup(args[0] as string, options),
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
      (await import("../commands/backup.js")).restore(args[0] as string, as(options)),
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
    run: async ({ options }) => (await import("../commands/plugin.js")).plugin(options),
  },
];

/** The security audit. */
export const SECURITY: CommandSpec[] = [
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
    run: async ({ options }) => (await import("../commands/security.js")).security(options),
  },
];
