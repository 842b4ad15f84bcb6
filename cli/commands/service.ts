/**
 * `spar service install|uninstall|status`: start Spar at login (a systemd user unit, a launchd agent)
 * or at boot (`--system`: a systemd system unit run as a dedicated user). Every step is printed as
 * the command it is, and when the service manager cannot be reached (a container, a staging root)
 * the commands are printed for the user to run instead.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { resolveHome } from "../../lib/home.js";
import {
  LAUNCHD_LABEL,
  launchdPlist,
  type ServiceFacts,
  systemUnit,
  UNIT_NAME,
  userUnit,
} from "../../lib/service-unit.js";
import { SparError } from "../../sdk/errors.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { type GlobalOptions, printJson } from "../output.js";

export interface ServiceOptions extends GlobalOptions {
  system?: boolean;
  dryRun?: boolean;
  print?: boolean;
  dataDir?: string;
  user?: string;
}

/**
 * Where and how: the platform (`SPAR_SERVICE_PLATFORM` overrides process.platform, for tests and
 * packagers making a macOS agent elsewhere) and the root the files go under (`SPAR_SERVICE_ROOT`,
 * default `/`: a staging root for packagers and tests, where nothing is enabled or run).
 */
interface Target {
  kind: "systemd-user" | "systemd-system" | "launchd";
  /** The file written. */
  path: string;
  text: string;
  /** Whether the service manager is ours to drive (the real root, and it runs). */
  live: boolean;
  /** The account a system unit runs as. */
  user?: string;
  home: string;
}

/** One step: the command, and what became of it. */
interface Step {
  command: string;
  outcome: "done" | "failed" | "to run";
  detail?: string;
}

export async function service(action: string, _args: string[], options: ServiceOptions): Promise<void> {
  const target = describeTarget(options);
  if (action === "install") return install(target, options);
  if (action === "uninstall") return uninstall(target, options);
  return status(target, options);
}

function describeTarget(options: ServiceOptions): Target {
  const platform = process.env.SPAR_SERVICE_PLATFORM || process.platform;
  const root = resolve(process.env.SPAR_SERVICE_ROOT || "/");
  const staged = root !== "/";
  const bin = fileURLToPath(new URL("../../../bin/spar.js", import.meta.url));
  const readme = fileURLToPath(new URL("../../../README.md", import.meta.url));
  const base = { node: process.execPath, bin, version: KERNEL_VERSION, readme };
  if (options.system) {
    if (platform !== "linux") {
      throw new SparError("VALIDATION_FAILED", "--system is for Linux (systemd); on macOS install the agent");
    }
    const user = options.user ?? "spar";
    if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) {
      throw new SparError(
        "VALIDATION_FAILED",
        `--user must be a system account name, not ${JSON.stringify(user)}`,
      );
    }
    const home = resolve(options.dataDir ?? "/var/lib/spar");
    const facts = { ...base, home, user };
    const path = join(root, "etc/systemd/system", UNIT_NAME);
    return {
      kind: "systemd-system",
      path,
      text: systemUnit(facts),
      live: !staged && systemdRuns(),
      user,
      home,
    };
  }
  if (options.user)
    throw new SparError("VALIDATION_FAILED", "--user names a system unit's account: add --system");
  const home = options.dataDir ? resolve(options.dataDir) : resolveHome();
  const facts: ServiceFacts = { ...base, home };
  if (platform === "darwin") {
    const path = join(root === "/" ? homedir() : root, "Library/LaunchAgents", `${LAUNCHD_LABEL}.plist`);
    return {
      kind: "launchd",
      path,
      text: launchdPlist(facts),
      live: !staged && process.platform === "darwin",
      home,
    };
  }
  if (platform !== "linux") {
    throw new SparError(
      "VALIDATION_FAILED",
      `spar service supports Linux (systemd) and macOS (launchd), not ${platform}`,
    );
  }
  const config = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  const path = join(root === "/" ? config : join(root, config), "systemd/user", UNIT_NAME);
  return { kind: "systemd-user", path, text: userUnit(facts), live: !staged && systemdRuns(), home };
}

/** systemd is the init system (sd_booted(3)'s test). */
function systemdRuns(): boolean {
  return existsSync("/run/systemd/system");
}

async function install(target: Target, options: ServiceOptions): Promise<void> {
  if (options.print) {
    process.stdout.write(target.text);
    return;
  }
  if (target.kind === "systemd-system" && process.getuid?.() !== 0 && !options.dryRun) {
    throw new SparError("FORBIDDEN", "spar service install --system must run as root (sudo)");
  }
  const steps: Step[] = [];
  const plan = installCommands(target);
  if (options.dryRun) {
    for (const command of plan.before) steps.push({ command: command.join(" "), outcome: "to run" });
    steps.push({ command: `write ${target.path}`, outcome: "to run" });
    for (const command of plan.after) steps.push({ command: command.join(" "), outcome: "to run" });
    return report("install", target, steps, options, true);
  }
  run(plan.before, target.live, steps);
  if (target.kind === "launchd") {
    // launchd opens StandardOutPath itself but makes no folder for it.
    mkdirSync(join(target.home, "logs"), { recursive: true, mode: 0o700 });
    steps.push({ command: `mkdir -p ${join(target.home, "logs")}`, outcome: "done" });
  }
  if (!steps.some((s) => s.outcome === "failed")) {
    mkdirSync(dirname(target.path), { recursive: true });
    writeFileSync(target.path, target.text, { mode: 0o644 });
    steps.push({ command: `write ${target.path}`, outcome: "done" });
    run(plan.after, target.live, steps);
  }
  report("install", target, steps, options, false);
}

/** The commands around writing the file: making the account and data dir, then enabling it. */
function installCommands(target: Target): { before: string[][]; after: string[][] } {
  if (target.kind === "launchd") {
    const domain = `gui/${process.getuid?.() ?? 501}`;
    return {
      before: [],
      after: [
        ["launchctl", "bootout", `${domain}/${LAUNCHD_LABEL}`],
        ["launchctl", "bootstrap", domain, target.path],
      ],
    };
  }
  const systemctl = target.kind === "systemd-user" ? ["systemctl", "--user"] : ["systemctl"];
  const after = [
    [...systemctl, "daemon-reload"],
    [...systemctl, "enable", "--now", "spar"],
  ];
  if (target.kind === "systemd-user") return { before: [], after };
  const user = target.user ?? "spar";
  return {
    before: [
      [
        "useradd",
        "--system",
        "--home-dir",
        target.home,
        "--no-create-home",
        "--shell",
        "/usr/sbin/nologin",
        user,
      ],
      ["install", "-d", "-m", "0700", "-o", user, "-g", user, target.home],
    ],
    after,
  };
}

/**
 * Runs each command when the service manager is ours to drive, else lists it to run. `useradd` is
 * skipped for an account that exists; `launchctl bootout` of an agent not loaded may fail harmlessly.
 */
function run(commands: string[][], live: boolean, steps: Step[]): void {
  for (const argv of commands) {
    const command = argv.join(" ");
    if (argv[0] === "useradd" && accountExists(argv.at(-1) ?? "")) {
      steps.push({ command, outcome: "done", detail: "the account exists" });
      continue;
    }
    if (!live) {
      steps.push({ command, outcome: "to run" });
      continue;
    }
    const [file = "", ...args] = argv;
    const result = spawnSync(file, args, { encoding: "utf8" });
    const ok = result.status === 0;
    const optional = argv[1] === "bootout";
    const detail = (result.stderr || result.error?.message || "").trim();
    if (ok || optional) steps.push({ command, outcome: "done", ...(ok ? {} : { detail }) });
    else {
      steps.push({ command, outcome: "failed", detail });
      const rest = commands.slice(commands.indexOf(argv) + 1);
      for (const next of rest) steps.push({ command: next.join(" "), outcome: "to run" });
      return;
    }
  }
}

function accountExists(user: string): boolean {
  if (!existsSync("/etc/passwd")) return false;
  return readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .some((line) => line.startsWith(`${user}:`));
}

async function uninstall(target: Target, options: ServiceOptions): Promise<void> {
  if (target.kind === "systemd-system" && process.getuid?.() !== 0 && !options.dryRun) {
    throw new SparError("FORBIDDEN", "spar service uninstall --system must run as root (sudo)");
  }
  const steps: Step[] = [];
  const before =
    target.kind === "launchd"
      ? [["launchctl", "bootout", `gui/${process.getuid?.() ?? 501}/${LAUNCHD_LABEL}`]]
      : [
          [
            ...(target.kind === "systemd-user" ? ["systemctl", "--user"] : ["systemctl"]),
            "disable",
            "--now",
            "spar",
          ],
        ];
  const reload =
    target.kind === "launchd"
      ? []
      : [[...(target.kind === "systemd-user" ? ["systemctl", "--user"] : ["systemctl"]), "daemon-reload"]];
  if (options.dryRun) {
    for (const c of [...before, ["rm", target.path], ...reload])
      steps.push({ command: c.join(" "), outcome: "to run" });
    return report("uninstall", target, steps, options, true);
  }
  if (!existsSync(target.path)) {
    steps.push({ command: `rm ${target.path}`, outcome: "done", detail: "not installed" });
    return report("uninstall", target, steps, options, false);
  }
  run(before, target.live, steps);
  rmSync(target.path, { force: true });
  steps.push({ command: `rm ${target.path}`, outcome: "done" });
  run(reload, target.live, steps);
  // The data dir and a system unit's account are left: they hold the fighters, keys and history.
  report("uninstall", target, steps, options, false);
}

async function status(target: Target, options: ServiceOptions): Promise<void> {
  const installed = existsSync(target.path);
  const current = installed && readFileSync(target.path, "utf8") === target.text;
  let enabled: string | undefined;
  let active: string | undefined;
  if (target.live && target.kind !== "launchd") {
    const systemctl = target.kind === "systemd-user" ? ["--user"] : [];
    enabled = query(["systemctl", ...systemctl, "is-enabled", "spar"]);
    active = query(["systemctl", ...systemctl, "is-active", "spar"]);
  } else if (target.live) {
    active = query(["launchctl", "print", `gui/${process.getuid?.() ?? 501}/${LAUNCHD_LABEL}`])
      ? "loaded"
      : "not loaded";
  }
  const reachable = target.live;
  const facts = {
    kind: target.kind,
    path: target.path,
    installed,
    // An older Spar's unit, or one edited by hand: install writes this Spar's again.
    current,
    ...(enabled !== undefined ? { enabled } : {}),
    ...(active !== undefined ? { active } : {}),
    manager_reachable: reachable,
  };
  if (options.json) return printJson(facts);
  const lines = [
    `${label(target)}: ${installed ? `installed at ${target.path}` : `not installed (would be ${target.path})`}`,
  ];
  if (installed && !current)
    lines.push("  the file differs from what this Spar writes: spar service install rewrites it");
  if (enabled !== undefined) lines.push(`  enabled: ${enabled}`);
  if (active !== undefined) lines.push(`  active: ${active}`);
  if (!reachable) lines.push("  the service manager is not reachable here: enabled/active unknown");
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** A query's first line of output (systemctl is-enabled/is-active answer on stdout, whatever their status). */
function query(argv: string[]): string | undefined {
  const [file = "", ...args] = argv;
  const result = spawnSync(file, args, { encoding: "utf8" });
  if (result.error) return undefined;
  return result.stdout.trim().split("\n")[0] || (result.status === 0 ? "yes" : undefined);
}

function label(target: Target): string {
  if (target.kind === "launchd") return `launchd agent ${LAUNCHD_LABEL}`;
  return target.kind === "systemd-user"
    ? "systemd user unit spar.service"
    : "systemd system unit spar.service";
}

function report(verb: string, target: Target, steps: Step[], options: ServiceOptions, dryRun: boolean): void {
  const failed = steps.find((s) => s.outcome === "failed");
  if (options.json) {
    printJson({ action: verb, kind: target.kind, path: target.path, dry_run: dryRun, steps, ok: !failed });
  } else {
    const mark = { done: "✓", failed: "✗", "to run": "·" } as const;
    const lines = steps.map((s) => `${mark[s.outcome]} ${s.command}${s.detail ? `  (${s.detail})` : ""}`);
    if (dryRun) lines.unshift(`Would ${verb} the ${label(target)} (nothing written):`);
    else lines.unshift(`${verb === "install" ? "Installed" : "Uninstalled"} the ${label(target)}:`);
    const pending = steps.filter((s) => s.outcome === "to run");
    if (pending.length && !dryRun) {
      lines.push(
        target.live
          ? "Then run the remaining commands above by hand once the failure is fixed."
          : "The service manager is not reachable here (no systemd running, a container, or a staging root): run the commands marked · where it is.",
      );
    }
    if (verb === "install" && target.kind === "systemd-user") {
      lines.push("To start it at boot rather than at login: loginctl enable-linger $USER");
    }
    if (verb === "install")
      lines.push(`Logs: spar logs -f (the file: ${join(target.home, "logs", "spar.log")})`);
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  if (failed)
    throw new SparError("INTERNAL", `${failed.command} failed${failed.detail ? `: ${failed.detail}` : ""}`);
}
