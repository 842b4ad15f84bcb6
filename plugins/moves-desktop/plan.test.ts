import { describe, expect, it } from "vitest";
import { commandEnv } from "./desktop.js";
import {
  type CommandPlan,
  chooseSession,
  classifyTarget,
  clickPlan,
  displayFailure,
  type Failure,
  isFailure,
  macPermissionFailure,
  openPlan,
  type Plan,
  type Session,
  screenshotPlan,
  typePlan,
} from "./plan.js";

// The rows of the README's fallback table, one decision at a time. `tools(...)` is the set of tools
// found on the moves' PATH: plain data, as the daemon computes it from the real PATH.
const tools =
  (...names: string[]) =>
  (tool: string) =>
    names.includes(tool);
const X11: Session = { kind: "x11", display: ":99", from: "config" };
const WAYLAND: Session = { kind: "wayland", name: "wayland-1", socket: "/run/user/1000/wayland-1" };
const MAC: Session = { kind: "macos" };

function planned(plan: Plan): CommandPlan {
  if (isFailure(plan)) throw new Error(`expected a plan, got ${plan.fail.code}: ${plan.fail.message}`);
  return plan;
}
function refused(value: unknown): Failure["fail"] {
  if (!isFailure(value)) throw new Error(`expected a refusal, got ${JSON.stringify(value)}`);
  return value.fail;
}

describe("which desktop session a move uses", () => {
  it("takes [moves.desktop] display first, as X11, whatever the environment says", () => {
    expect(chooseSession("linux", ":5", { WAYLAND_DISPLAY: "wayland-0", DISPLAY: ":0" })).toEqual({
      kind: "x11",
      display: ":5",
      from: "config",
    });
    expect(chooseSession("darwin", ":5", {})).toMatchObject({ kind: "x11" });
  });

  it("prefers the daemon's WAYLAND_DISPLAY to its DISPLAY (X11 tools see only XWayland there)", () => {
    const env = { WAYLAND_DISPLAY: "wayland-0", DISPLAY: ":0", XDG_RUNTIME_DIR: "/run/user/1" };
    expect(chooseSession("linux", undefined, env)).toEqual({
      kind: "wayland",
      name: "wayland-0",
      socket: "/run/user/1/wayland-0",
    });
    expect(chooseSession("linux", undefined, { WAYLAND_DISPLAY: "/tmp/wl" })).toMatchObject({
      socket: "/tmp/wl",
    });
    expect(refused(chooseSession("linux", undefined, { WAYLAND_DISPLAY: "wayland-0" })).message).toMatch(
      /XDG_RUNTIME_DIR is not set/,
    );
    expect(chooseSession("linux", undefined, { DISPLAY: ":0" })).toEqual({
      kind: "x11",
      display: ":0",
      from: "environment",
    });
  });

  it("names every way to give a display when there is none, and refuses other systems", () => {
    const none = refused(chooseSession("linux", undefined, {}));
    expect(none.code).toBe("NOT_FOUND");
    expect(none.message).toMatch(/DISPLAY.*WAYLAND_DISPLAY.*\[moves\.desktop\] display/);
    expect(chooseSession("darwin", undefined, { DISPLAY: ":0" })).toEqual({ kind: "macos" });
    expect(refused(chooseSession("win32", undefined, {})).message).toMatch(/not on win32/);
  });
});

describe("the display check", () => {
  it("passes a reachable display and turns each refusal into a code naming where the display came from", () => {
    expect(displayFailure(X11, { ok: true, width: 10, height: 10 })).toBeUndefined();
    const gone = refused(
      displayFailure(X11, { ok: false, refusal: { kind: "unreachable", reason: "no X" } }),
    );
    expect(gone).toEqual({
      code: "NOT_FOUND",
      message: "X11 display not reachable ([moves.desktop] display): no X",
    });
    const fromEnv: Session = { kind: "x11", display: ":0", from: "environment" };
    const denied = refused(
      displayFailure(fromEnv, { ok: false, refusal: { kind: "refused", reason: "no cookie" } }),
    );
    expect(denied.code).toBe("FORBIDDEN");
    expect(denied.message).toContain("DISPLAY in the daemon's environment");
    const socket = refused(displayFailure(WAYLAND, { ok: false, waylandSocketMissing: true }));
    expect(socket).toMatchObject({ code: "NOT_FOUND" });
    expect(socket.message).toContain("no socket at /run/user/1000/wayland-1");
  });
});

describe("desktop_screenshot when the in-process X11 capture cannot read the display", () => {
  const why = "its root window is a PseudoColor visual";

  it("runs ImageMagick's import first and says it is a fallback, and why", () => {
    const plan = planned(screenshotPlan(X11, tools("import", "xwd", "convert"), "/w/s.png", why));
    expect(plan.steps).toEqual([{ tool: "import", args: ["-window", "root", "png:/w/s.png"] }]);
    expect(plan.fallback).toContain(why);
    expect(plan.fallback).toContain("ImageMagick's import ran instead");
  });

  it("pipes xwd into convert when import is missing", () => {
    const plan = planned(screenshotPlan(X11, tools("xwd", "convert"), "/w/s.png", why));
    expect(plan.steps).toEqual([
      {
        tool: "xwd",
        args: ["-root", "-silent"],
        pipeTo: { tool: "convert", args: ["xwd:-", "png:/w/s.png"] },
      },
    ]);
    expect(plan.fallback).toContain("xwd | convert ran instead");
    expect(refused(screenshotPlan(X11, tools("xwd"), "/w/s.png", why)).message).toContain("xwd + convert");
  });

  it("fails naming the packages when no shell tool is there", () => {
    const failure = refused(screenshotPlan(X11, tools(), "/w/s.png", why));
    expect(failure.code).toBe("NOT_FOUND");
    expect(failure.message).toContain(why);
    expect(failure.message).toContain(
      "import (package imagemagick) or xwd + convert (package x11-apps and imagemagick)",
    );
  });

  it("uses grim on Wayland and screencapture on macOS, which are the usual ways there, not fallbacks", () => {
    expect(planned(screenshotPlan(WAYLAND, tools("grim", "import"), "/w/s.png"))).toEqual({
      method: "grim",
      steps: [{ tool: "grim", args: ["-t", "png", "/w/s.png"] }],
    });
    expect(refused(screenshotPlan(WAYLAND, tools("import"), "/w/s.png")).message).toMatch(/needs grim/);
    expect(planned(screenshotPlan(MAC, tools(), "/w/s.png")).steps[0]).toEqual({
      tool: "screencapture",
      args: ["-x", "-t", "png", "/w/s.png"],
    });
  });
});

describe("desktop_type", () => {
  const evil = "-e 'do shell script \"rm -rf ~\"' --window 1";

  it("gives xdotool the text on standard input, never as an argument", () => {
    const plan = planned(typePlan(X11, tools("xdotool"), evil, 12));
    expect(plan.steps).toEqual([
      { tool: "xdotool", args: ["type", "--delay", "12", "--file", "-"], stdin: evil },
    ]);
    expect(plan.fallback).toBeUndefined();
  });

  it("fails on X11 without xdotool: nothing else can type there", () => {
    const failure = refused(typePlan(X11, tools("import", "wtype", "ydotool"), "hi", 12));
    expect(failure).toMatchObject({ code: "NOT_FOUND" });
    expect(failure.message).toMatch(
      /^typing on X11 needs xdotool: xdotool \(package xdotool\) is not installed/,
    );
  });

  it("uses wtype on Wayland, ydotool as the fallback, and fails naming both", () => {
    expect(planned(typePlan(WAYLAND, tools("wtype", "ydotool"), evil, 0)).steps).toEqual([
      { tool: "wtype", args: ["--", evil] },
    ]);
    const ydotool = planned(typePlan(WAYLAND, tools("ydotool"), "hi", 0));
    expect(ydotool.steps).toEqual([{ tool: "ydotool", args: ["type", "--", "hi"] }]);
    expect(ydotool.fallback).toMatch(/wtype is not installed/);
    expect(refused(typePlan(WAYLAND, tools("xdotool"), "hi", 0)).message).toMatch(/wtype .* or ydotool/);
  });

  it("hands macOS the text through the environment, so no argument can be read as an osascript option", () => {
    const [step] = planned(typePlan(MAC, tools(), evil, 0)).steps;
    expect(step?.env).toEqual({ DESKTOP_TEXT: evil });
    expect(step?.args.join(" ")).not.toContain("rm -rf");
  });
});

describe("desktop_click", () => {
  it("refuses a point outside the screen before anything runs", () => {
    const failure = refused(
      clickPlan(X11, tools("xdotool"), { x: 640, y: 0, button: "left" }, { width: 640, height: 480 }),
    );
    expect(failure.code).toBe("VALIDATION_FAILED");
    expect(failure.message).toContain("outside the screen, which is 640×480");
  });

  it("maps the buttons for xdotool and ydotool, and needs ydotool on Wayland", () => {
    const x11 = planned(
      clickPlan(X11, tools("xdotool"), { x: 3, y: 4, button: "right" }, { width: 9, height: 9 }),
    );
    expect(x11.steps).toEqual([{ tool: "xdotool", args: ["mousemove", "3", "4", "click", "3"] }]);
    expect(refused(clickPlan(X11, tools(), { x: 1, y: 1, button: "left" })).message).toMatch(/needs xdotool/);
    const wayland = planned(clickPlan(WAYLAND, tools("ydotool"), { x: 3, y: 4, button: "middle" }));
    expect(wayland.steps.map((s) => s.args)).toEqual([
      ["mousemove", "--absolute", "-x", "3", "-y", "4"],
      ["click", "0xC2"],
    ]);
    expect(refused(clickPlan(WAYLAND, tools("wtype"), { x: 1, y: 1, button: "left" })).message).toMatch(
      /wtype cannot click/,
    );
    expect(planned(clickPlan(MAC, tools(), { x: 7, y: 8, button: "left" })).steps[0]?.env).toEqual({
      DESKTOP_X: "7",
      DESKTOP_Y: "8",
      DESKTOP_BUTTON: "left",
    });
  });
});

describe("desktop_open_app: what the target is", () => {
  const files = new Set(["/ws/report.pdf", "/ws/sub/a.txt", "/home/u/notes.txt", "/etc/hosts"]);
  const exists = (p: string) => files.has(p);

  it("opens http, https and mailto URLs and refuses every other scheme", () => {
    expect(classifyTarget("https://example.com/x", "/ws", exists, "/home/u")).toEqual({
      kind: "url",
      url: "https://example.com/x",
    });
    expect(classifyTarget("mailto:a@b.c", "/ws", exists)).toMatchObject({ kind: "url" });
    for (const bad of ["javascript:alert(1)", "file:///etc/passwd", "steam://run/1", "smb://host/share"]) {
      expect(refused(classifyTarget(bad, "/ws", exists)).code).toBe("VALIDATION_FAILED");
    }
  });

  it("resolves paths in the workspace (or from ~ and /), and says when the file is not there", () => {
    expect(classifyTarget("sub/a.txt", "/ws", exists)).toEqual({ kind: "file", path: "/ws/sub/a.txt" });
    expect(classifyTarget("./report.pdf", "/ws", exists)).toEqual({ kind: "file", path: "/ws/report.pdf" });
    expect(classifyTarget("report.pdf", "/ws", exists)).toEqual({ kind: "file", path: "/ws/report.pdf" });
    expect(classifyTarget("~/notes.txt", "/ws", exists, "/home/u")).toEqual({
      kind: "file",
      path: "/home/u/notes.txt",
    });
    expect(classifyTarget("/etc/hosts", "/ws", exists)).toEqual({ kind: "file", path: "/etc/hosts" });
    expect(refused(classifyTarget("../nope.txt", "/ws", exists))).toEqual({
      code: "NOT_FOUND",
      message: "no file at /nope.txt",
    });
  });

  it("takes any other name as an application's, but not one that could pass for an option", () => {
    expect(classifyTarget("Firefox Web Browser", "/ws", exists)).toEqual({
      kind: "app",
      name: "Firefox Web Browser",
    });
    expect(refused(classifyTarget("--help", "/ws", exists)).code).toBe("VALIDATION_FAILED");
    expect(refused(classifyTarget("a;b", "/ws", exists)).code).toBe("VALIDATION_FAILED");
  });
});

describe("desktop_open_app: what runs", () => {
  const url = { kind: "url", url: "https://example.com" } as const;
  const app = { kind: "app", name: "Editor" } as const;
  const entry = { file: "/usr/share/applications/editor.desktop", id: "editor" };

  it("opens files and URLs with xdg-open, else gio open as the fallback, else fails naming both", () => {
    expect(planned(openPlan(X11, tools("xdg-open", "gio"), url))).toEqual({
      method: "xdg-open",
      steps: [{ tool: "xdg-open", args: ["https://example.com"] }],
    });
    const gio = planned(openPlan(WAYLAND, tools("gio"), url));
    expect(gio.steps).toEqual([{ tool: "gio", args: ["open", "https://example.com"] }]);
    expect(gio.fallback).toMatch(/xdg-open is not installed/);
    expect(refused(openPlan(X11, tools(), url)).message).toMatch(/needs xdg-open or gio/);
  });

  it("launches an application's desktop entry with gio launch, else gtk-launch", () => {
    expect(planned(openPlan(X11, tools("gio", "gtk-launch"), app, entry)).steps).toEqual([
      { tool: "gio", args: ["launch", entry.file] },
    ]);
    const gtk = planned(openPlan(X11, tools("gtk-launch"), app, entry));
    expect(gtk.steps).toEqual([{ tool: "gtk-launch", args: ["editor"] }]);
    expect(gtk.fallback).toMatch(/gio is not installed/);
    expect(refused(openPlan(X11, tools("gio"), app)).code).toBe("NOT_FOUND");
  });

  it("uses open and open -a on macOS", () => {
    expect(planned(openPlan(MAC, tools(), url)).steps).toEqual([
      { tool: "open", args: ["https://example.com"] },
    ]);
    expect(planned(openPlan(MAC, tools(), app)).steps).toEqual([{ tool: "open", args: ["-a", "Editor"] }]);
  });
});

describe("macOS permissions", () => {
  it("refuses with FORBIDDEN naming the permission only when macOS says it is not granted", () => {
    const screen = refused(macPermissionFailure("screen_recording", false));
    expect(screen.code).toBe("FORBIDDEN");
    expect(screen.message).toContain("Privacy & Security → Screen Recording");
    expect(refused(macPermissionFailure("accessibility", false)).message).toContain("Accessibility");
    expect(macPermissionFailure("accessibility", true)).toBeUndefined();
    expect(
      macPermissionFailure("accessibility", { unknown: "osascript is not on the PATH" }),
    ).toBeUndefined();
  });
});

describe("the environment a desktop command gets", () => {
  const daemon = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/u",
    DISPLAY: ":0",
    WAYLAND_DISPLAY: "wayland-0",
    XAUTHORITY: "/home/u/.Xauthority",
    XDG_RUNTIME_DIR: "/run/user/1",
    OPENAI_API_KEY: "sk-secret",
    SPAR_MASTER_KEY: "00ff",
    GITHUB_TOKEN: "ghp_x",
    SSH_AUTH_SOCK: "/tmp/agent",
  };

  it("passes the session's variables only: no key, no SPAR_ variable, no agent socket", () => {
    expect(commandEnv(X11, {}, daemon)).toEqual({
      PATH: "/usr/bin:/bin",
      LANG: "C.UTF-8",
      HOME: "/home/u",
      XAUTHORITY: "/home/u/.Xauthority",
      XDG_RUNTIME_DIR: "/run/user/1",
      DISPLAY: ":99",
    });
    const wayland = commandEnv(WAYLAND, { path: "/opt/tools" }, daemon);
    expect(wayland).toMatchObject({ PATH: "/opt/tools", WAYLAND_DISPLAY: "wayland-1", DISPLAY: ":0" });
    expect(Object.keys(wayland)).not.toContain("OPENAI_API_KEY");
  });
});
