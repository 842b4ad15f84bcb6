import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Capability } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/**
 * The desktop moves for real: Xvfb displays this test starts, a real X client (xev) that reports
 * every key and click it receives, the real daemon, and a scripted model that calls the moves.
 * Without Xvfb and its friends (NEEDED) the display tests skip with a loud warning on a developer's
 * machine and FAIL under CI (CI=true), whose script installs them. The no-display tests need none of
 * them and always run.
 */

type ErrorBody = { error: { code: string; message: string } };
interface Screenshot {
  path: string;
  bytes: number;
  width: number;
  height: number;
  method: string;
  fallback?: string;
  note: string;
}

const SECRETS = { OPENAI_API_KEY: "sk-test-secret-0000", GITHUB_TOKEN: "ghp_desktopcanary0000" };

function installed(tool: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const NEEDED = ["Xvfb", "xev", "xwininfo", "xdotool", "import", "gio", "xmessage"];
const INSTALL = "apt-get install -y xvfb x11-utils xdotool imagemagick libglib2.0-bin";
const missing = NEEDED.filter((tool) => !installed(tool));
const inCI = process.env.CI === "true";
if (missing.length > 0 && !inCI) {
  console.warn(
    `\n*** SKIPPING the desktop e2e tests on real displays: ${missing.join(", ")} not installed. ` +
      `Install them with: ${INSTALL} ***\n`,
  );
}

/** The daemons the tests started and their homes: stopAll() tears them down. */
const started: { daemons: TestDaemon[]; homes: string[] } = { daemons: [], homes: [] };

/** A daemon whose `[moves.desktop]` table is `table`, with a desktop fighter and one without. */
async function desktopDaemon(
  fake: FakeOpenAI,
  table: string,
  env: NodeJS.ProcessEnv = {},
): Promise<TestDaemon> {
  const home = tempHome();
  started.homes.push(home);
  const port = await freePort();
  writeConfig(home, port, fake.url, `\n[creed]\nreflect = false\n\n[moves.desktop]\n${table}\n`);
  const daemon = await startDaemon(home, port, { ...SECRETS, ...env });
  started.daemons.push(daemon);
  const spawnFighter = async (name: string, capabilities: Capability[]) => {
    const created = await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
    expect(created.status).toBe(201);
  };
  await spawnFighter("pilot", [{ type: "desktop" }]);
  await spawnFighter("walker", [{ type: "memory" }]);
  return daemon;
}

/** The scripted model calls one move; the tool result the daemon sent back to it. */
async function callMove(
  fake: FakeOpenAI,
  daemon: TestDaemon,
  fighter: string,
  move: string,
  args: Record<string, unknown>,
) {
  fake.enqueue({ tool_calls: [{ name: move, arguments: args }] });
  const reply = await daemon.request("POST", `/api/v1/fighters/${fighter}/message`, {
    message: `use ${move}`,
  });
  expect(reply.status).toBe(200);
  return JSON.parse(fake.calls().at(-1)?.tool_results.at(-1) ?? "null") as Record<string, unknown> &
    Partial<ErrorBody>;
}

async function stopAll(): Promise<void> {
  for (const daemon of started.daemons.splice(0)) await daemon.stop();
  for (const home of started.homes.splice(0)) removeHome(home);
}

const EVERY_MOVE = [
  ["desktop_screenshot", {}],
  ["desktop_type", { text: "hello" }],
  ["desktop_click", { x: 1, y: 1 }],
  ["desktop_open_app", { name_or_path: "https://example.com" }],
] as const;

/** An Xvfb that picked its own free display number (-displayfd): the number and the process. */
async function startXvfb(depth: number): Promise<{ display: string; process: ChildProcess }> {
  const child = spawn("Xvfb", ["-displayfd", "3", "-screen", "0", `640x480x${depth}`, "-nolisten", "tcp"], {
    stdio: ["ignore", "ignore", "pipe", "pipe"],
  });
  let said = "";
  child.stdio[2]?.on("data", (d: Buffer) => {
    said += d.toString();
  });
  const number = await new Promise<string>((done, fail) => {
    let text = "";
    child.stdio[3]?.on("data", (d: Buffer) => {
      text += d.toString();
      if (text.includes("\n")) done(text.trim());
    });
    child.once("exit", (code) => fail(new Error(`Xvfb exited with ${code}: ${said}`)));
  });
  return { display: `:${number}`, process: child };
}

/** A display number nobody serves: no socket and no lock file. */
function deadDisplay(): string {
  for (let n = 400; n < 600; n += 1) {
    if (!existsSync(`/tmp/.X11-unix/X${n}`) && !existsSync(`/tmp/.X${n}-lock`)) return `:${n}`;
  }
  throw new Error("no free display number");
}

/** A PNG's pixels, for PNGs as the in-process capture writes them (8-bit RGB, filter 0 on every row). */
function pixelsOf(png: Buffer): { width: number; height: number; at(x: number, y: number): number[] } {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  expect([png[24], png[25]]).toEqual([8, 2]);
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    if (png.toString("latin1", at + 4, at + 8) === "IDAT") idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const row = width * 3 + 1;
  return {
    width,
    height,
    at(x, y) {
      expect(raw[y * row]).toBe(0);
      const start = y * row + 1 + x * 3;
      return [...raw.subarray(start, start + 3)];
    },
  };
}

/** The keysyms of the KeyPress events xev printed (Shift left out), and its button presses. */
function xevSaw(output: string): { keys: string[]; buttons: string[] } {
  const keys = [...output.matchAll(/KeyPress event[\s\S]*?\(keysym 0x[0-9a-f]+, ([^)]+)\)/g)]
    .map((m) => m[1] as string)
    .filter((k) => !k.startsWith("Shift"));
  const buttons = [
    ...output.matchAll(/ButtonPress event[\s\S]*?root:\((\d+,\d+)\)[\s\S]*?button (\d+)/g),
  ].map((m) => `${m[2]}@${m[1]}`);
  return { keys, buttons };
}

describe.skipIf(process.platform !== "linux")("moves-desktop without any display (Linux)", () => {
  let fake: FakeOpenAI;
  const scratch = mkdtempSync(join(tmpdir(), "spar-nodisplay-"));

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });

  afterAll(async () => {
    await stopAll();
    await fake?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("fails every move clearly, naming the display it looked for, when there is neither DISPLAY nor WAYLAND_DISPLAY", async () => {
    const daemon = await desktopDaemon(fake, "", { DISPLAY: undefined, WAYLAND_DISPLAY: undefined });
    for (const [move, args] of EVERY_MOVE) {
      const result = await callMove(fake, daemon, "pilot", move, args);
      expect({ move, error: result.error }).toEqual({
        move,
        error: {
          code: "NOT_FOUND",
          message:
            "no desktop display: the daemon's environment has neither DISPLAY nor WAYLAND_DISPLAY, and [moves.desktop] display is not set",
        },
      });
    }
    // A move that could not run left nothing behind.
    expect(existsSync(join(daemon.home, "workspaces", "pilot", "screenshots"))).toBe(false);
    for (const [move, args] of EVERY_MOVE) {
      const result = await callMove(fake, daemon, "walker", move, args);
      expect({ move, code: result.error?.code }).toEqual({ move, code: "CAPABILITY_DENIED" });
    }
    // No error the model saw carries the daemon's secrets.
    const seen = fake
      .calls()
      .flatMap((c) => c.tool_results)
      .join("\n");
    for (const secret of Object.values(SECRETS)) expect(seen).not.toContain(secret);
  });

  it("names the Wayland socket it could not find when WAYLAND_DISPLAY points nowhere", async () => {
    const daemon = await desktopDaemon(fake, "", {
      DISPLAY: undefined,
      WAYLAND_DISPLAY: "wayland-spar-none",
      XDG_RUNTIME_DIR: scratch,
    });
    for (const [move, args] of EVERY_MOVE) {
      const result = await callMove(fake, daemon, "pilot", move, args);
      expect({ move, error: result.error }).toEqual({
        move,
        error: {
          code: "NOT_FOUND",
          message: `the Wayland display wayland-spar-none is not reachable: no socket at ${join(scratch, "wayland-spar-none")} (WAYLAND_DISPLAY in the daemon's environment)`,
        },
      });
    }
  });
});

// Under CI a missing tool is a failure, not a skip: CI's script installs every one of them.
it.runIf(inCI)("CI has every tool the display tests need (NEEDED)", () => {
  expect(missing, `CI must install them: ${INSTALL}`).toEqual([]);
});

describe.skipIf(missing.length > 0)("moves-desktop through the real daemon, on real X displays", () => {
  let fake: FakeOpenAI;
  let screen: { display: string; process: ChildProcess };
  let eightBit: { display: string; process: ChildProcess };
  let xev: ChildProcess;
  let xevOutput = "";
  const scratch = mkdtempSync(join(tmpdir(), "spar-desktop-"));
  const daemonWith = (table: string, env: NodeJS.ProcessEnv = {}) => desktopDaemon(fake, table, env);
  const call = (daemon: TestDaemon, fighter: string, move: string, args: Record<string, unknown>) =>
    callMove(fake, daemon, fighter, move, args);

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    screen = await startXvfb(24);
    eightBit = await startXvfb(8);
    xev = spawn(
      "xev",
      ["-geometry", "300x200+0+0", "-event", "keyboard", "-event", "button", "-event", "structure"],
      {
        env: { ...process.env, DISPLAY: screen.display },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    xev.stdout?.on("data", (d: Buffer) => {
      xevOutput += d.toString();
    });
    // xev says MapNotify once its window is on the screen: from then on it hears every key.
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`xev did not map its window in 10 s: ${xevOutput}`)),
        10_000,
      );
      xev.stdout?.on("data", () => {
        if (!xevOutput.includes("MapNotify")) return;
        clearTimeout(timer);
        done();
      });
    });
  });

  afterAll(async () => {
    await stopAll();
    await fake?.close();
    for (const child of [xev, screen?.process, eightBit?.process]) child?.kill("SIGTERM");
    rmSync(scratch, { recursive: true, force: true });
  });

  it("screenshots, clicks, types and opens an app on a real display, for a fighter granted desktop only", async () => {
    const dataHome = join(scratch, "data");
    mkdirSync(join(dataHome, "applications"), { recursive: true });
    const envFile = join(scratch, "launched-env.txt");
    writeFileSync(
      join(dataHome, "applications", "spar-probe.desktop"),
      "[Desktop Entry]\nType=Application\nName=Spar Probe\n" +
        `Exec=sh -c "env > ${envFile}; exec xmessage -title spar-probe-window probe"\n`,
    );
    const daemon = await daemonWith(`display = "${screen.display}"`, { XDG_DATA_HOME: dataHome });

    const shot = (await call(daemon, "pilot", "desktop_screenshot", {})) as unknown as Screenshot;
    expect(shot).toMatchObject({ width: 640, height: 480, method: "x11 GetImage (in-process)" });
    expect(shot.fallback).toBeUndefined();
    expect(shot.note).toMatch(/not in this result/);
    expect(shot.path).toMatch(/^screenshots\/desktop-.*\.png$/);
    const png = readFileSync(join(daemon.home, "workspaces", "pilot", shot.path));
    expect(png.length).toBe(shot.bytes);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // What is on the screen is in the picture: xev's white window on Xvfb's black root.
    const pixels = pixelsOf(png);
    expect(pixels.at(150, 150)).toEqual([255, 255, 255]);
    expect(pixels.at(500, 400)).toEqual([0, 0, 0]);

    const click = await call(daemon, "pilot", "desktop_click", { x: 120, y: 90 });
    expect(click).toMatchObject({
      clicked: { x: 120, y: 90, button: "left" },
      method: "xdotool mousemove click",
    });
    const right = await call(daemon, "pilot", "desktop_click", { x: 60, y: 70, button: "right" });
    expect(right.error).toBeUndefined();
    const typed = await call(daemon, "pilot", "desktop_type", { text: "Hi spar-1" });
    expect(typed).toMatchObject({ typed: 9, method: "xdotool type" });
    await expect
      .poll(() => xevSaw(xevOutput).keys.join(" "), { timeout: 10_000 })
      .toBe("H i space s p a r minus 1");
    expect(xevSaw(xevOutput).buttons).toEqual(["1@120,90", "3@60,70"]);

    const outside = await call(daemon, "pilot", "desktop_click", { x: 640, y: 10 });
    expect(outside.error).toMatchObject({ code: "VALIDATION_FAILED" });
    expect(outside.error?.message).toMatch(/outside the screen, which is 640×480/);

    const opened = await call(daemon, "pilot", "desktop_open_app", { name_or_path: "Spar Probe" });
    expect(opened).toMatchObject({
      kind: "app",
      method: "gio launch",
      application: { name: "Spar Probe" },
    });
    await expect
      .poll(() => existsSync(envFile) && readFileSync(envFile, "utf8").includes("DISPLAY="))
      .toBe(true);
    const launchedEnv = readFileSync(envFile, "utf8");
    expect(launchedEnv).toContain(`DISPLAY=${screen.display}`);
    for (const secret of Object.values(SECRETS)) expect(launchedEnv).not.toContain(secret);
    expect(launchedEnv).not.toMatch(/^SPAR_/m);
    const windows = () =>
      execFileSync("xwininfo", ["-root", "-tree"], {
        env: { ...process.env, DISPLAY: screen.display },
      }).toString();
    await expect.poll(windows, { timeout: 10_000 }).toContain("spar-probe-window");

    const unknown = await call(daemon, "pilot", "desktop_open_app", { name_or_path: "no-such-app-here" });
    expect(unknown.error?.code).toBe("NOT_FOUND");
    expect(unknown.error?.message).toMatch(/no application named "no-such-app-here"/);
    const scheme = await call(daemon, "pilot", "desktop_open_app", { name_or_path: "javascript:alert(1)" });
    expect(scheme.error?.code).toBe("VALIDATION_FAILED");
  });

  it("refuses every desktop move to a fighter without the grant (CAPABILITY_DENIED), before it runs", async () => {
    const daemon = await daemonWith(`display = "${screen.display}"`);
    const before = xevSaw(xevOutput);
    for (const [move, args] of [
      ["desktop_screenshot", {}],
      ["desktop_type", { text: "evil" }],
      ["desktop_click", { x: 10, y: 10 }],
      ["desktop_open_app", { name_or_path: "https://example.com" }],
    ] as const) {
      const result = await call(daemon, "walker", move, args);
      expect(result.error?.code).toBe("CAPABILITY_DENIED");
      expect(result.error?.message).toContain('"desktop" capability');
    }
    expect(existsSync(join(daemon.home, "workspaces", "walker", "screenshots"))).toBe(false);
    expect(xevSaw(xevOutput)).toEqual(before);
  });

  it("fails clearly, naming the display, when no X server answers there", async () => {
    const dead = deadDisplay();
    const daemon = await daemonWith(`display = "${dead}"`);
    for (const [move, args] of [
      ["desktop_screenshot", {}],
      ["desktop_type", { text: "hello" }],
      ["desktop_click", { x: 1, y: 1 }],
      ["desktop_open_app", { name_or_path: "https://example.com" }],
    ] as const) {
      const result = await call(daemon, "pilot", move, args);
      expect(result.error?.code).toBe("NOT_FOUND");
      expect(result.error?.message).toContain(`X11 display not reachable ([moves.desktop] display)`);
      expect(result.error?.message).toContain(`display ${dead}`);
    }
  });

  it("without xdotool, typing and clicking fail naming it, and a display the capture cannot read falls back to ImageMagick's import", async () => {
    const tools = join(scratch, "only-import");
    mkdirSync(tools, { recursive: true });
    symlinkSync(execFileSync("sh", ["-c", "command -v import"]).toString().trim(), join(tools, "import"));
    const daemon = await daemonWith(`display = "${eightBit.display}"\npath = "${tools}"`);

    const shot = (await call(daemon, "pilot", "desktop_screenshot", {})) as unknown as Screenshot;
    expect(shot).toMatchObject({ width: 640, height: 480, method: "import -window root (ImageMagick)" });
    expect(shot.fallback).toMatch(/PseudoColor visual at depth 8.*ImageMagick's import ran instead/);
    const png = readFileSync(join(daemon.home, "workspaces", "pilot", shot.path));
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([640, 480]);

    for (const [move, args] of [
      ["desktop_type", { text: "hello" }],
      ["desktop_click", { x: 5, y: 5 }],
    ] as const) {
      const result = await call(daemon, "pilot", move, args);
      expect(result.error?.code).toBe("NOT_FOUND");
      expect(result.error?.message).toMatch(/needs xdotool: xdotool \(package xdotool\) is not installed/);
    }
    const opened = await call(daemon, "pilot", "desktop_open_app", { name_or_path: "https://example.com" });
    expect(opened.error?.code).toBe("NOT_FOUND");
    expect(opened.error?.message).toMatch(/needs xdg-open or gio/);
  });

  it("without xdg-open, opens a workspace file through the gio alternative, and the result says it is one", async () => {
    const tools = join(scratch, "only-gio");
    const dataHome = join(scratch, "gio-data");
    const configHome = join(scratch, "gio-config");
    const userHome = join(scratch, "gio-home");
    for (const dir of [tools, join(dataHome, "applications"), configHome, userHome]) {
      mkdirSync(dir, { recursive: true });
    }
    symlinkSync(execFileSync("sh", ["-c", "command -v gio"]).toString().trim(), join(tools, "gio"));
    // The desktop's default handler for text files: a viewer that notes what it was asked to open.
    const opened = join(scratch, "viewer-opened.txt");
    const viewer = join(scratch, "viewer.sh");
    writeFileSync(viewer, `#!/bin/sh\n/usr/bin/env > ${opened}.env\nprintf '%s\\n' "$@" > ${opened}\n`, {
      mode: 0o755,
    });
    writeFileSync(
      join(dataHome, "applications", "spar-viewer.desktop"),
      `[Desktop Entry]\nType=Application\nName=Spar Viewer\nMimeType=text/plain;\nExec=${viewer} %f\n`,
    );
    writeFileSync(
      join(configHome, "mimeapps.list"),
      "[Default Applications]\ntext/plain=spar-viewer.desktop\n",
    );
    const daemon = await daemonWith(`display = "${screen.display}"\npath = "${tools}"`, {
      HOME: userHome,
      XDG_DATA_HOME: dataHome,
      XDG_CONFIG_HOME: configHome,
    });
    // A file the fighter made earlier (its workspace exists from its first turn on).
    mkdirSync(join(daemon.home, "workspaces", "pilot"), { recursive: true, mode: 0o700 });
    const report = join(daemon.home, "workspaces", "pilot", "report.txt");
    writeFileSync(report, "the quarterly report\n");

    const result = await call(daemon, "pilot", "desktop_open_app", { name_or_path: "report.txt" });
    expect(result).toEqual({
      opened: report,
      kind: "file",
      method: "gio open",
      fallback: "xdg-open is not installed; gio open ran instead",
    });
    await expect
      .poll(() => existsSync(opened) && readFileSync(opened, "utf8"), { timeout: 10_000 })
      .toBe(`${report}\n`);
    const viewerEnv = readFileSync(`${opened}.env`, "utf8");
    expect(viewerEnv).toContain(`DISPLAY=${screen.display}`);
    for (const secret of Object.values(SECRETS)) expect(viewerEnv).not.toContain(secret);
    expect(viewerEnv).not.toMatch(/^SPAR_/m);
  });

  it("with the import fallback hidden too, the screenshot fails naming the tools it looked for", async () => {
    const empty = join(scratch, "no-tools");
    mkdirSync(empty, { recursive: true });
    const daemon = await daemonWith(`display = "${eightBit.display}"\npath = "${empty}"`);
    const result = await call(daemon, "pilot", "desktop_screenshot", {});
    expect(result.error?.code).toBe("NOT_FOUND");
    expect(result.error?.message).toMatch(/PseudoColor.*import \(package imagemagick\)/);
  });
});
