import type { CommandSpec } from "../command-spec.js";
import { as } from "./shared.js";

/** Running Spar as a service: its log, and starting it at login or boot. */
export const OPERATIONS: CommandSpec[] = [
  {
    name: "logs",
    summary: "Show the daemon's log (<data dir>/logs/spar.log); works while the daemon is down",
    options: [
      {
        flag: "--follow",
        short: "f",
        summary: "Keep printing new lines as they come, across rotations (Ctrl-C stops)",
      },
      { flag: "--level", value: "level", summary: "Only lines at this level or worse: info, warn or error" },
      {
        flag: "--since",
        value: "time|duration",
        summary:
          "Only lines from then on: an ISO time (2026-01-31T09:00) or a duration back (90s, 15m, 2h, 1d)",
      },
      { flag: "--fighter", value: "name|id", summary: "Only lines about this fighter" },
      {
        flag: "--lines",
        short: "n",
        value: "n",
        summary: "How many of the last matching lines to show first (default: 100; all with --since)",
        integer: { min: 0, max: 1_000_000 },
      },
    ],
    run: async ({ options }) => (await import("../commands/logs.js")).logs(as(options)),
  },
  {
    name: "service",
    summary: "Start Spar at login or boot: a systemd unit (Linux) or a launchd agent (macOS)",
    options: [
      {
        flag: "--system",
        summary:
          "A system unit (/etc/systemd/system) run as a dedicated account, started at boot; needs root",
      },
      {
        flag: "--user",
        value: "name",
        summary: "The account of a --system unit, made if missing (default: spar)",
      },
      {
        flag: "--data-dir",
        value: "path",
        summary:
          "The data dir the service uses (default: $SPAR_HOME or ~/.spar; /var/lib/spar with --system)",
      },
      { flag: "--dry-run", summary: "Print what would be written and run; change nothing" },
      { flag: "--print", summary: "Print only the unit (or plist) to stdout; change nothing" },
    ],
    actions: [
      {
        name: "install",
        args: "",
        summary:
          "Write the unit, then reload and enable --now it (printing each step, or the commands to run)",
      },
      {
        name: "uninstall",
        args: "",
        summary: "Disable and stop it, and remove the unit (the data dir is kept)",
      },
      { name: "status", args: "", summary: "Whether it is installed, enabled and running" },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/service.js")).service(action, args, as(options)),
  },
];
