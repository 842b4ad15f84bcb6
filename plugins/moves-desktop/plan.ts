import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { ErrorCode } from "../../sdk/index.js";
import type { X11Refusal } from "./x11.js";

/**
 * Every decision the desktop moves make, as pure functions of what was found on the machine: which
 * desktop session to use, whether its display and tools are there, and what runs instead when they
 * are not. The README's fallback table is this file in words; plan.test.ts checks each row.
 */

/** The desktop a move acts on. */
export type Session =
  | { kind: "x11"; display: string; from: "config" | "environment" }
  | { kind: "wayland"; name: string; socket: string }
  | { kind: "macos" };

/** A refusal with a stable code and a message that names what is missing. */
export interface Failure {
  fail: { code: ErrorCode; message: string };
}

/** One command: a tool looked up on the moves' PATH, argv only, optional stdin or second stage. */
export interface Step {
  tool: string;
  args: string[];
  stdin?: string;
  /** Extra environment for this command only (macOS scripts read their input from it, never argv). */
  env?: Record<string, string>;
  pipeTo?: { tool: string; args: string[] };
}

/** Commands to run in order; `fallback` says why this is the alternative and not the usual way. */
export interface CommandPlan {
  method: string;
  steps: Step[];
  fallback?: string;
}

export type Plan = CommandPlan | Failure;

export const isFailure = (value: unknown): value is Failure =>
  typeof value === "object" && value !== null && "fail" in value;

const failure = (code: ErrorCode, message: string): Failure => ({ fail: { code, message } });

/** Where each tool comes from, for "install it" messages. */
const PACKAGES: Record<string, string> = {
  xdotool: "xdotool",
  import: "imagemagick",
  convert: "imagemagick",
  xwd: "x11-apps",
  "xwd + convert": "x11-apps and imagemagick",
  grim: "grim",
  wtype: "wtype",
  ydotool: "ydotool",
  "xdg-open": "xdg-utils",
  gio: "libglib2.0-bin",
  "gtk-launch": "libgtk-3-bin",
};

export function missingTools(tools: readonly string[], why: string): Failure {
  const named = tools.map((t) => (PACKAGES[t] ? `${t} (package ${PACKAGES[t]})` : t)).join(" or ");
  return failure(
    "NOT_FOUND",
    `${why}: ${named} is not installed, or not on the PATH the desktop moves use ([moves.desktop] path, else the daemon's PATH)`,
  );
}

/**
 * The session, from the first of: `[moves.desktop] display` (always X11), the daemon's
 * WAYLAND_DISPLAY, its DISPLAY. macOS without a configured display is its own desktop.
 */
export function chooseSession(
  platform: NodeJS.Platform,
  configured: string | undefined,
  env: Record<string, string | undefined>,
): Session | Failure {
  if (configured) return { kind: "x11", display: configured, from: "config" };
  if (platform === "darwin") return { kind: "macos" };
  if (platform !== "linux" && !platform.endsWith("bsd")) {
    return failure(
      "NOT_FOUND",
      `the desktop moves work on Linux (X11 or Wayland) and macOS, not on ${platform}`,
    );
  }
  const wayland = env.WAYLAND_DISPLAY;
  if (wayland) {
    if (isAbsolute(wayland)) return { kind: "wayland", name: wayland, socket: wayland };
    if (!env.XDG_RUNTIME_DIR) {
      return failure(
        "NOT_FOUND",
        `WAYLAND_DISPLAY is "${wayland}" but XDG_RUNTIME_DIR is not set in the daemon's environment, so its socket cannot be found`,
      );
    }
    return { kind: "wayland", name: wayland, socket: join(env.XDG_RUNTIME_DIR, wayland) };
  }
  if (env.DISPLAY) return { kind: "x11", display: env.DISPLAY, from: "environment" };
  return failure(
    "NOT_FOUND",
    "no desktop display: the daemon's environment has neither DISPLAY nor WAYLAND_DISPLAY, and [moves.desktop] display is not set",
  );
}

/** What a display check found: the X11 handshake's outcome, or whether the Wayland socket is there. */
export type DisplayCheck =
  | { ok: true; width?: number; height?: number }
  | { ok: false; refusal: X11Refusal }
  | { ok: false; waylandSocketMissing: true };

/** A failed display check as the move's error; no alternative can work without the display. */
export function displayFailure(session: Session, check: DisplayCheck): Failure | undefined {
  if (check.ok) return undefined;
  if ("waylandSocketMissing" in check) {
    const name = session.kind === "wayland" ? session.name : "?";
    const socket = session.kind === "wayland" ? session.socket : "?";
    return failure(
      "NOT_FOUND",
      `the Wayland display ${name} is not reachable: no socket at ${socket} (WAYLAND_DISPLAY in the daemon's environment)`,
    );
  }
  const source =
    session.kind === "x11" && session.from === "config"
      ? "[moves.desktop] display"
      : "DISPLAY in the daemon's environment";
  const { kind, reason } = check.refusal;
  if (kind === "refused") return failure("FORBIDDEN", `X11 display not usable (${source}): ${reason}`);
  if (kind === "protocol") return failure("INTERNAL", `X11 display not usable (${source}): ${reason}`);
  return failure("NOT_FOUND", `X11 display not reachable (${source}): ${reason}`);
}

/**
 * A screenshot when the in-process X11 capture cannot read the picture (`problem`), or on a session
 * that has no in-process capture: the shell-based tools, first one installed wins.
 */
export function screenshotPlan(
  session: Session,
  has: (tool: string) => boolean,
  file: string,
  problem?: string,
): Plan {
  if (session.kind === "macos") {
    return { method: "screencapture", steps: [{ tool: "screencapture", args: ["-x", "-t", "png", file] }] };
  }
  if (session.kind === "wayland") {
    if (has("grim")) return { method: "grim", steps: [{ tool: "grim", args: ["-t", "png", file] }] };
    return missingTools(["grim"], "a screenshot on Wayland needs grim (wlroots compositors)");
  }
  const fallback = `the in-process X11 capture could not read this display (${problem ?? "unknown reason"})`;
  if (has("import")) {
    return {
      method: "import -window root (ImageMagick)",
      fallback: `${fallback}; ImageMagick's import ran instead`,
      steps: [{ tool: "import", args: ["-window", "root", `png:${file}`] }],
    };
  }
  if (has("xwd") && has("convert")) {
    return {
      method: "xwd -root | convert",
      fallback: `${fallback}; xwd | convert ran instead`,
      steps: [
        {
          tool: "xwd",
          args: ["-root", "-silent"],
          pipeTo: { tool: "convert", args: ["xwd:-", `png:${file}`] },
        },
      ],
    };
  }
  return missingTools(
    ["import", "xwd + convert"],
    `${fallback}, and no shell-based screenshot tool is there`,
  );
}

/** macOS scripts (JavaScript for Automation) read their input from the environment, never argv. */
const MAC_TYPE = `function run() {
  const text = $.NSProcessInfo.processInfo.environment.objectForKey("DESKTOP_TEXT").js;
  Application("System Events").keystroke(text);
  return "ok";
}`;

const MAC_CLICK = `function run() {
  ObjC.import("CoreGraphics");
  const env = $.NSProcessInfo.processInfo.environment;
  const read = (name) => env.objectForKey(name).js;
  const point = $.CGPointMake(Number(read("DESKTOP_X")), Number(read("DESKTOP_Y")));
  const kinds = {
    left: [$.kCGEventLeftMouseDown, $.kCGEventLeftMouseUp, $.kCGMouseButtonLeft],
    right: [$.kCGEventRightMouseDown, $.kCGEventRightMouseUp, $.kCGMouseButtonRight],
    middle: [$.kCGEventOtherMouseDown, $.kCGEventOtherMouseUp, $.kCGMouseButtonCenter],
  };
  const [down, up, button] = kinds[read("DESKTOP_BUTTON")];
  for (const type of [down, up]) $.CGEventPost($.kCGHIDEventTap, $.CGEventCreateMouseEvent(null, type, point, button));
  return "ok";
}`;

/** The macOS permission checks: JXA calls that answer true or false without prompting. */
export const MAC_CHECKS = {
  screen_recording: {
    label: "Screen Recording",
    script: 'ObjC.import("CoreGraphics"); $.CGPreflightScreenCaptureAccess()',
  },
  accessibility: {
    label: "Accessibility",
    script: 'ObjC.import("ApplicationServices"); $.AXIsProcessTrusted()',
  },
} as const;

export type MacPermission = keyof typeof MAC_CHECKS;

/** What the macOS check said: granted, not granted, or the check itself could not run. */
export type MacCheck = true | false | { unknown: string };

export function macPermissionFailure(permission: MacPermission, check: MacCheck): Failure | undefined {
  if (check !== false) return undefined;
  const label = MAC_CHECKS[permission].label;
  return failure(
    "FORBIDDEN",
    `macOS has not granted ${label} to the process running the Spar daemon (System Settings → Privacy & Security → ${label}); grant it and restart the daemon`,
  );
}

export function typePlan(
  session: Session,
  has: (tool: string) => boolean,
  text: string,
  delayMs: number,
): Plan {
  if (session.kind === "x11") {
    if (!has("xdotool")) return missingTools(["xdotool"], "typing on X11 needs xdotool");
    return {
      method: "xdotool type",
      steps: [{ tool: "xdotool", args: ["type", "--delay", String(delayMs), "--file", "-"], stdin: text }],
    };
  }
  if (session.kind === "wayland") {
    if (has("wtype")) return { method: "wtype", steps: [{ tool: "wtype", args: ["--", text] }] };
    if (has("ydotool")) {
      return {
        method: "ydotool type",
        fallback: "wtype is not installed; ydotool (through its ydotoold service) ran instead",
        steps: [{ tool: "ydotool", args: ["type", "--", text] }],
      };
    }
    return missingTools(["wtype", "ydotool"], "typing on Wayland needs wtype or ydotool");
  }
  return {
    method: "osascript (System Events keystroke)",
    steps: [{ tool: "osascript", args: ["-l", "JavaScript", "-e", MAC_TYPE], env: { DESKTOP_TEXT: text } }],
  };
}

export type Button = "left" | "middle" | "right";
const X11_BUTTONS: Record<Button, string> = { left: "1", middle: "2", right: "3" };
// ydotool 1.x: the low bits are the button (0 left, 1 right, 2 middle), 0xC0 is press and release.
const YDOTOOL_BUTTONS: Record<Button, string> = { left: "0xC0", right: "0xC1", middle: "0xC2" };

export function clickPlan(
  session: Session,
  has: (tool: string) => boolean,
  at: { x: number; y: number; button: Button },
  screen?: { width?: number; height?: number },
): Plan {
  if (screen?.width !== undefined && screen.height !== undefined) {
    if (at.x >= screen.width || at.y >= screen.height) {
      return failure(
        "VALIDATION_FAILED",
        `(${at.x}, ${at.y}) is outside the screen, which is ${screen.width}×${screen.height} (x < ${screen.width}, y < ${screen.height})`,
      );
    }
  }
  const [x, y] = [String(at.x), String(at.y)];
  if (session.kind === "x11") {
    if (!has("xdotool")) return missingTools(["xdotool"], "clicking on X11 needs xdotool");
    return {
      method: "xdotool mousemove click",
      steps: [{ tool: "xdotool", args: ["mousemove", x, y, "click", X11_BUTTONS[at.button]] }],
    };
  }
  if (session.kind === "wayland") {
    if (!has("ydotool"))
      return missingTools(["ydotool"], "clicking on Wayland needs ydotool (wtype cannot click)");
    return {
      method: "ydotool mousemove click",
      steps: [
        { tool: "ydotool", args: ["mousemove", "--absolute", "-x", x, "-y", y] },
        { tool: "ydotool", args: ["click", YDOTOOL_BUTTONS[at.button]] },
      ],
    };
  }
  return {
    method: "osascript (CoreGraphics mouse events)",
    steps: [
      {
        tool: "osascript",
        args: ["-l", "JavaScript", "-e", MAC_CLICK],
        env: { DESKTOP_X: x, DESKTOP_Y: y, DESKTOP_BUTTON: at.button },
      },
    ],
  };
}

/** What `desktop_open_app` was asked to open. */
export type Target =
  | { kind: "url"; url: string }
  | { kind: "file"; path: string }
  | { kind: "app"; name: string };

const URL_SCHEMES = new Set(["http", "https", "mailto"]);

/**
 * A URL (http, https, mailto), a file (a path: absolute, `~/…`, or relative to the workspace; a
 * bare name only when that file is in the workspace), or else an application's name.
 */
export function classifyTarget(
  raw: string,
  workspace: string,
  exists: (path: string) => boolean,
  home = homedir(),
): Target | Failure {
  const value = raw.trim();
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(value)?.[1]?.toLowerCase();
  if (scheme && scheme.length > 1) {
    if (URL_SCHEMES.has(scheme)) return { kind: "url", url: value };
    return failure(
      "VALIDATION_FAILED",
      `only http, https and mailto URLs can be opened, not ${scheme}:; give a file as a path`,
    );
  }
  const pathLike = value.includes("/") || value.startsWith("~") || value.startsWith(".");
  if (pathLike) {
    const path =
      value === "~" || value.startsWith("~/") ? join(home, value.slice(1)) : resolve(workspace, value);
    if (!exists(path)) return failure("NOT_FOUND", `no file at ${path}`);
    return { kind: "file", path };
  }
  if (exists(join(workspace, value))) return { kind: "file", path: join(workspace, value) };
  if (!/^[\p{L}\p{N}][\p{L}\p{N} ._+-]{0,127}$/u.test(value)) {
    return failure(
      "VALIDATION_FAILED",
      `"${value}" is neither a URL, a path nor an application name (letters, digits, space, . _ + -)`,
    );
  }
  return { kind: "app", name: value };
}

/**
 * Opening a URL or file with the desktop's default handler, or launching an application from its
 * desktop entry (`entry`, found by the caller; an app without one is NOT_FOUND before this).
 */
export function openPlan(
  session: Session,
  has: (tool: string) => boolean,
  target: Target,
  entry?: { file: string; id: string },
): Plan {
  if (session.kind === "macos") {
    if (target.kind === "app")
      return { method: "open -a", steps: [{ tool: "open", args: ["-a", target.name] }] };
    const what = target.kind === "url" ? target.url : target.path;
    return { method: "open", steps: [{ tool: "open", args: [what] }] };
  }
  if (target.kind === "app") {
    if (!entry) return failure("NOT_FOUND", `no application named "${target.name}"`);
    if (has("gio")) return { method: "gio launch", steps: [{ tool: "gio", args: ["launch", entry.file] }] };
    if (has("gtk-launch")) {
      return {
        method: "gtk-launch",
        fallback: "gio is not installed; gtk-launch ran instead",
        steps: [{ tool: "gtk-launch", args: [entry.id] }],
      };
    }
    return missingTools(["gio", "gtk-launch"], `launching ${entry.file} needs gio or gtk-launch`);
  }
  const what = target.kind === "url" ? target.url : target.path;
  if (has("xdg-open")) return { method: "xdg-open", steps: [{ tool: "xdg-open", args: [what] }] };
  if (has("gio")) {
    return {
      method: "gio open",
      fallback: "xdg-open is not installed; gio open ran instead",
      steps: [{ tool: "gio", args: ["open", what] }],
    };
  }
  return missingTools(["xdg-open", "gio"], `opening ${what} needs xdg-open or gio`);
}
