import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { type MoveContext, type MoveHandler, SparError } from "../../sdk/index.js";
import type { Sandbox } from "../../sdk/kits/sandbox.js";
import { applicationDirs, findDesktopEntry } from "./desktop-entry.js";
import {
  type Button,
  type CommandPlan,
  chooseSession,
  classifyTarget,
  clickPlan,
  type DisplayCheck,
  displayFailure,
  type Failure,
  isFailure,
  MAC_CHECKS,
  type MacCheck,
  type MacPermission,
  macPermissionFailure,
  openPlan,
  type Plan,
  type Session,
  screenshotPlan,
  typePlan,
} from "./plan.js";
import { encodePng, pngSize } from "./png.js";
import { type CommandResult, commandFailed, findTool, runCommand } from "./run.js";
import { openDisplay, toRgb, type X11Connection, X11Error } from "./x11.js";

/** `[moves.desktop]` with its defaults applied (plugin.json holds the same defaults and the schema). */
export interface DesktopSettings {
  display?: string;
  path?: string;
  timeout_s: number;
  type_delay_ms: number;
  keep_screenshots: number;
}

/**
 * The variables a desktop command sees besides PATH and LANG: where the session is and how to reach
 * it (display, authority, runtime and D-Bus sockets, where desktop entries live). Nothing else of
 * the daemon's environment, so no provider key or SPAR_* variable reaches a command or an app.
 */
const PASSED = [
  "HOME",
  "XAUTHORITY",
  "XDG_RUNTIME_DIR",
  "DBUS_SESSION_BUS_ADDRESS",
  "XDG_DATA_HOME",
  "XDG_DATA_DIRS",
  "XDG_CONFIG_HOME",
  "XDG_CURRENT_DESKTOP",
  "YDOTOOL_SOCKET",
] as const;

const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin";
const MOST_PIXELS = 50_000_000;

export function commandEnv(
  session: Session,
  settings: Pick<DesktopSettings, "path">,
  env: Record<string, string | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {
    PATH: settings.path ?? env.PATH ?? FALLBACK_PATH,
    LANG: env.LANG || "C.UTF-8",
  };
  for (const name of PASSED) {
    const value = env[name];
    if (value) out[name] = value;
  }
  if (session.kind === "x11") out.DISPLAY = session.display;
  if (session.kind === "wayland") {
    out.WAYLAND_DISPLAY = session.name;
    if (env.DISPLAY) out.DISPLAY = env.DISPLAY;
  }
  return out;
}

interface Prepared {
  session: Session;
  env: Record<string, string>;
  has: (tool: string) => boolean;
  /** The open X11 connection (x11 sessions only); the caller closes it. */
  x11?: X11Connection;
}

const refuse = (failure: Failure): never => {
  throw new SparError(failure.fail.code, failure.fail.message);
};

/** Words of a command line for /bin/sh, each in single quotes. */
const shellWords = (words: readonly string[]) => words.map((w) => `'${w.replace(/'/g, "'\\''")}'`).join(" ");

/**
 * `sandbox`, when given, runs the commands of the screenshot, typing and clicking moves on Linux:
 * no network, no data dir, only the workspace writable, with the display's socket and its
 * authority file lent read-only. The launcher of `desktop_open_app` runs outside it: the app it
 * starts belongs to the user's desktop and must outlive the call (README: Containment).
 */
export function createDesktopMoves(
  settings: DesktopSettings,
  daemonEnv: Record<string, string | undefined>,
  platform: NodeJS.Platform,
  sandbox?: Sandbox,
): Record<string, MoveHandler> {
  const timeoutMs = settings.timeout_s * 1000;

  /** One step in the sandbox, with the session's sockets lent in. */
  async function sandboxed(
    box: Sandbox,
    step: CommandPlan["steps"][number],
    prepared: Prepared,
    path: string,
    workspace: string,
    signal: AbortSignal,
  ): Promise<CommandResult> {
    const { HOME: _home, PATH: _path, ...env } = { ...prepared.env, ...step.env };
    const binds: { path: string }[] = [{ path: "/tmp/.X11-unix" }];
    const authority = env.XAUTHORITY ?? (daemonEnv.HOME ? join(daemonEnv.HOME, ".Xauthority") : undefined);
    if (authority && existsSync(authority)) {
      env.XAUTHORITY = authority;
      binds.push({ path: authority });
    }
    if (prepared.session.kind === "wayland") binds.push({ path: prepared.session.socket });
    const argv = step.pipeTo
      ? [
          "/bin/sh",
          "-c",
          `${shellWords([step.tool, ...step.args])} | ${shellWords([step.pipeTo.tool, ...step.pipeTo.args])}`,
        ]
      : [step.tool, ...step.args];
    const result = await box.run({
      argv,
      workspace,
      cwd: workspace,
      path,
      env,
      ...(step.stdin !== undefined ? { stdin: step.stdin } : {}),
      timeoutMs,
      maxOutputBytes: 65_536,
      signal,
      binds,
    });
    if (result.timed_out) {
      throw new SparError(
        "MOVE_TIMEOUT",
        `${step.tool} did not finish within ${settings.timeout_s} s ([moves.desktop] timeout_s) and was killed`,
      );
    }
    return { code: result.exit_code, stdout: result.stdout, stderr: result.stderr };
  }

  /** The session, its display checked (the X11 handshake, or the Wayland socket), and its tools. */
  async function prepare(signal: AbortSignal): Promise<Prepared> {
    const chosen = chooseSession(platform, settings.display, daemonEnv);
    if (isFailure(chosen)) return refuse(chosen);
    const session = chosen;
    const env = commandEnv(session, settings, daemonEnv);
    const has = (tool: string) => findTool(tool, env.PATH ?? "") !== undefined;
    if (session.kind === "macos") return { session, env, has };
    if (session.kind === "wayland") {
      const check: DisplayCheck = existsSync(session.socket)
        ? { ok: true }
        : { ok: false, waylandSocketMissing: true };
      const failed = displayFailure(session, check);
      if (failed) refuse(failed);
      return { session, env, has };
    }
    try {
      const x11 = await openDisplay(session.display, env, { timeoutMs, signal });
      return { session, env, has, x11 };
    } catch (err) {
      if (!(err instanceof X11Error)) throw err;
      return refuse(displayFailure(session, { ok: false, refusal: err.refusal }) as Failure);
    }
  }

  /** Runs a plan's steps: in the sandbox on Linux when `workspace` is given (every move but open_app). */
  async function runPlan(
    plan: Plan,
    prepared: Prepared,
    signal: AbortSignal,
    workspace?: string,
  ): Promise<CommandPlan> {
    if (isFailure(plan)) return refuse(plan);
    const path = prepared.env.PATH ?? "";
    const resolveTool = (tool: string) =>
      findTool(tool, path) ??
      refuse({ fail: { code: "NOT_FOUND", message: `${tool} disappeared from the PATH` } });
    const box = platform === "linux" && workspace !== undefined ? sandbox : undefined;
    for (const step of plan.steps) {
      if (box && workspace !== undefined) {
        resolveTool(step.tool);
        if (step.pipeTo) resolveTool(step.pipeTo.tool);
        const result = await sandboxed(box, step, prepared, path, workspace, signal);
        if (result.code !== 0) throw commandFailed(plan.method, result);
        continue;
      }
      const result = await runCommand(resolveTool(step.tool), step.args, {
        env: { ...prepared.env, ...step.env },
        timeoutMs,
        signal,
        ...(step.stdin !== undefined ? { stdin: step.stdin } : {}),
        ...(step.pipeTo ? { pipeTo: { file: resolveTool(step.pipeTo.tool), args: step.pipeTo.args } } : {}),
      });
      if (result.code !== 0) throw commandFailed(plan.method, result);
    }
    return plan;
  }

  /** Asks macOS, without prompting, whether the daemon's process holds a privacy permission. */
  async function macCheck(
    permission: MacPermission,
    prepared: Prepared,
    signal: AbortSignal,
  ): Promise<MacCheck> {
    const osascript = findTool("osascript", prepared.env.PATH ?? "");
    if (!osascript) return { unknown: "osascript is not on the PATH" };
    try {
      const result = await runCommand(osascript, ["-l", "JavaScript", "-e", MAC_CHECKS[permission].script], {
        env: prepared.env,
        timeoutMs,
        signal,
      });
      const said = result.stdout.trim();
      if (said === "true") return true;
      if (said === "false") return false;
      return { unknown: (result.stderr.trim() || said || `exit code ${result.code}`).slice(0, 300) };
    } catch (err) {
      if (signal.aborted) throw err;
      return { unknown: (err as Error).message };
    }
  }

  async function requireMac(permission: MacPermission, prepared: Prepared, signal: AbortSignal) {
    if (prepared.session.kind !== "macos") return undefined;
    const check = await macCheck(permission, prepared, signal);
    const failed = macPermissionFailure(permission, check);
    if (failed) refuse(failed);
    return check === true
      ? undefined
      : `could not check the ${MAC_CHECKS[permission].label} permission (${(check as { unknown: string }).unknown}); went ahead`;
  }

  async function screenshot(context: MoveContext) {
    const { signal, workspace } = context;
    const folder = join(workspace, "screenshots");
    const name = `desktop-${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(3).toString("hex")}.png`;
    const file = join(folder, name);
    // The display first: a move that cannot run leaves nothing behind in the workspace.
    const prepared = await prepare(signal);
    let method = "x11 GetImage (in-process)";
    let fallback: string | undefined;
    let warning: string | undefined;
    try {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      const problem = prepared.x11 ? await captureX11(prepared.x11, file) : undefined;
      if (!prepared.x11 || problem) {
        warning = await requireMac("screen_recording", prepared, signal);
        const plan = await runPlan(
          screenshotPlan(prepared.session, prepared.has, file, problem),
          prepared,
          signal,
          workspace,
        );
        method = plan.method;
        fallback = plan.fallback;
      }
    } finally {
      prepared.x11?.close();
    }
    const head = Buffer.alloc(24);
    const handle = await open(file, "r").catch(() =>
      refuse({ fail: { code: "INTERNAL", message: `${method} reported success but wrote no file` } }),
    );
    try {
      await handle.read(head, 0, 24, 0);
    } finally {
      await handle.close();
    }
    const size =
      pngSize(head) ?? refuse({ fail: { code: "INTERNAL", message: `${method} did not write a PNG` } });
    const bytes = (await stat(file)).size;
    await prune(folder, settings.keep_screenshots);
    return {
      path: relative(workspace, file),
      bytes,
      width: size.width,
      height: size.height,
      method,
      ...(fallback ? { fallback } : {}),
      ...(warning ? { warning } : {}),
      note: "The image itself is not in this result: it is a PNG file saved at `path` in your workspace.",
    };
  }

  return {
    desktop_screenshot: { name: "desktop_screenshot", run: (_input, context) => screenshot(context) },
    desktop_type: {
      name: "desktop_type",
      async run(input, { signal, workspace }) {
        const text = String(input.text);
        const prepared = await prepare(signal);
        prepared.x11?.close();
        const warning = await requireMac("accessibility", prepared, signal);
        const plan = await runPlan(
          typePlan(prepared.session, prepared.has, text, settings.type_delay_ms),
          prepared,
          signal,
          workspace,
        );
        return { typed: [...text].length, method: plan.method, ...extras(plan, warning) };
      },
    },
    desktop_click: {
      name: "desktop_click",
      async run(input, { signal, workspace }) {
        const at = { x: Number(input.x), y: Number(input.y), button: (input.button ?? "left") as Button };
        const prepared = await prepare(signal);
        const screen = prepared.x11?.screen;
        prepared.x11?.close();
        const warning = await requireMac("accessibility", prepared, signal);
        const plan = await runPlan(
          clickPlan(prepared.session, prepared.has, at, screen),
          prepared,
          signal,
          workspace,
        );
        return { clicked: at, method: plan.method, ...extras(plan, warning) };
      },
    },
    desktop_open_app: {
      name: "desktop_open_app",
      async run(input, { signal, workspace }) {
        const prepared = await prepare(signal);
        prepared.x11?.close();
        const target = classifyTarget(String(input.name_or_path), workspace, existsSync, daemonEnv.HOME);
        if (isFailure(target)) return refuse(target);
        let entry: { file: string; id: string; title: string } | undefined;
        if (target.kind === "app" && prepared.session.kind !== "macos") {
          const dirs = applicationDirs(daemonEnv);
          entry = findDesktopEntry(target.name, dirs);
          if (!entry) {
            refuse({
              fail: {
                code: "NOT_FOUND",
                message: `no application named "${target.name}": no ${target.name}.desktop and no desktop entry with that Name in ${dirs.join(", ")}`,
              },
            });
          }
        }
        const plan = await runPlan(openPlan(prepared.session, prepared.has, target, entry), prepared, signal);
        const opened =
          target.kind === "url" ? target.url : target.kind === "file" ? target.path : target.name;
        return {
          opened,
          kind: target.kind,
          ...(entry ? { application: { name: entry.title, desktop_entry: entry.file } } : {}),
          method: plan.method,
          ...extras(plan),
        };
      },
    },
  };
}

function extras(plan: CommandPlan, warning?: string) {
  return { ...(plan.fallback ? { fallback: plan.fallback } : {}), ...(warning ? { warning } : {}) };
}

/**
 * The in-process screenshot: the root window's pixels through GetImage, written as a PNG. Returns
 * why it could not (the caller falls back to the shell tools), or undefined when the file is written.
 */
async function captureX11(x11: X11Connection, file: string): Promise<string | undefined> {
  const { screen, setup } = x11;
  if (screen.width * screen.height > MOST_PIXELS) return `the screen is larger than ${MOST_PIXELS} pixels`;
  let image: Awaited<ReturnType<X11Connection["getRootImage"]>>;
  try {
    image = await x11.getRootImage();
  } catch (err) {
    if (err instanceof X11Error && err.refusal.kind === "protocol") return err.refusal.reason;
    throw err;
  }
  const converted = toRgb(image, setup, screen);
  if ("unsupported" in converted) return converted.unsupported;
  await writeFile(file, await encodePng(converted.rgb, screen.width, screen.height), { mode: 0o600 });
  return undefined;
}

/** Keeps the newest `keep` screenshots this pack took (their names sort by time); others go. */
async function prune(folder: string, keep: number): Promise<void> {
  const ours = (await readdir(folder)).filter((f) => /^desktop-.*\.png$/.test(f)).sort();
  for (const old of ours.slice(0, Math.max(0, ours.length - keep))) {
    await rm(join(folder, old), { force: true });
  }
}
