import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { underCi } from "../helpers/ci.js";
import { removeHome, runCli, SPAR_BIN, tempHome } from "../helpers/daemon.js";

const ANALYZE = "/usr/bin/systemd-analyze";
const PYTHON = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => existsSync(p));
const haveAnalyze = existsSync(ANALYZE);
// Under CI a missing tool fails these suites (.ci/run installs systemd and python3); elsewhere they skip.
const verifyIt = haveAnalyze || underCi() ? it : it.skip;
const plistIt = PYTHON || underCi() ? it : it.skip;

/** systemd-analyze verify's exit code and what it says about the unit (nothing, for a good one). */
function verify(unit: string, user: boolean, runtime: string): { code: number | null; said: string } {
  if (!haveAnalyze) throw new Error(`CI is set but ${ANALYZE} is missing: install Debian's systemd package`);
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const result = spawnSync(ANALYZE, [...(user ? ["--user"] : []), "verify", unit], {
    encoding: "utf8",
    // A user manager's verify needs a runtime dir; no user session exists in a test.
    env: { ...process.env, XDG_RUNTIME_DIR: runtime, SYSTEMD_LOG_LEVEL: "notice" },
  });
  // Warnings about other units on the machine are not ours: only lines naming this file count.
  const said = `${result.stdout}${result.stderr}`
    .split("\n")
    .filter((l) => l.includes("spar.service"))
    .join("\n");
  return { code: result.status, said };
}

/** The unit's settings (comments left out), as `Key=value` lines. */
const settings = (text: string) => text.split("\n").filter((l) => /^[A-Za-z]+=/.test(l));

describe("spar service: start at login or boot", () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = tempHome();
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) removeHome(d);
  });

  verifyIt("install writes a systemd user unit that systemd-analyze verify accepts", async () => {
    const home = dir();
    const data = join(home, "data");
    const result = await runCli(data, ["service", "install"], { HOME: home, XDG_CONFIG_HOME: "" });
    expect(result.code, result.stderr).toBe(0);
    const unit = join(home, ".config/systemd/user/spar.service");
    expect(result.stdout).toContain(`✓ write ${unit}`);
    // No systemd manager here: the commands are printed to run, not claimed done.
    expect(result.stdout).toMatch(/· systemctl --user daemon-reload\n· systemctl --user enable --now spar/);
    const text = readFileSync(unit, "utf8");
    const lines = settings(text);
    expect(lines).toContain(`ExecStart=${process.execPath} ${SPAR_BIN} start`);
    expect(lines).toContain(`Environment=SPAR_HOME=${data}`);
    expect(lines).toEqual(
      expect.arrayContaining([
        "Restart=on-failure",
        "RestartSec=5",
        "NoNewPrivileges=yes",
        "UMask=0077",
        "WantedBy=default.target",
      ]),
    );
    // Nothing that would stop bubblewrap making its namespaces, nor hand the keys to every child.
    for (const banned of ["RestrictNamespaces=", "PrivateUsers=", "SystemCallFilter=", "EnvironmentFile="]) {
      expect(lines.some((l) => l.startsWith(banned))).toBe(false);
    }
    expect(text).toContain(`${data}/.env`);
    const verdict = verify(unit, true, join(home, "run"));
    expect(verdict).toEqual({ code: 0, said: "" });
    // The check is not blind: a setting systemd cannot read is reported.
    const broken = join(home, "broken", "spar.service");
    mkdirSync(join(home, "broken"));
    writeFileSync(broken, text.replace("Restart=on-failure", "Restart=sometimes"));
    expect(verify(broken, true, join(home, "run")).said).toMatch(/Restart.*sometimes|sometimes/);
  });

  verifyIt(
    "--system writes a hardened system unit under a staging root, verified, run as its own account",
    async () => {
      const root = dir();
      const result = await runCli(root, ["service", "install", "--system", "--json"], {
        SPAR_SERVICE_ROOT: root,
      });
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout) as {
        kind: string;
        path: string;
        steps: { command: string; outcome: string }[];
      };
      const unit = join(root, "etc/systemd/system/spar.service");
      expect(report).toMatchObject({ kind: "systemd-system", path: unit, ok: true });
      // A staging root: the account and the enabling are left to run where the unit is installed.
      expect(report.steps.map((s) => s.command)).toEqual([
        expect.stringMatching(/^useradd --system --home-dir \/var\/lib\/spar .* spar$/),
        "install -d -m 0700 -o spar -g spar /var/lib/spar",
        `write ${unit}`,
        "systemctl daemon-reload",
        "systemctl enable --now spar",
      ]);
      expect(report.steps.find((s) => s.command.startsWith("write"))?.outcome).toBe("done");
      expect(report.steps.find((s) => s.command.startsWith("systemctl"))?.outcome).toBe("to run");
      const lines = settings(readFileSync(unit, "utf8"));
      expect(lines).toEqual(
        expect.arrayContaining([
          "User=spar",
          "Environment=SPAR_HOME=/var/lib/spar",
          "ProtectSystem=strict",
          "ReadWritePaths=/var/lib/spar",
          "PrivateTmp=yes",
          "ProtectKernelTunables=yes",
          "NoNewPrivileges=yes",
          "Restart=on-failure",
          "WantedBy=multi-user.target",
        ]),
      );
      for (const banned of ["RestrictNamespaces=", "PrivateUsers=", "MemoryDenyWriteExecute="]) {
        expect(lines.some((l) => l.startsWith(banned))).toBe(false);
      }
      expect(verify(unit, false, join(root, "run"))).toEqual({ code: 0, said: "" });
    },
  );

  it("--dry-run and --print write nothing; --user needs --system", async () => {
    const home = dir();
    const env = { HOME: home, XDG_CONFIG_HOME: "" };
    const dry = await runCli(home, ["service", "install", "--dry-run"], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^Would install the systemd user unit spar\.service \(nothing written\):/);
    const printed = await runCli(home, ["service", "install", "--print"], env);
    expect(printed.stdout).toMatch(/^# Spar .*\n[\s\S]*\[Service\][\s\S]*ExecStart=/);
    expect(existsSync(join(home, ".config/systemd/user/spar.service"))).toBe(false);
    const wrong = await runCli(home, ["service", "install", "--user", "bob"], env);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("--user names a system unit's account: add --system (VALIDATION_FAILED)");
  });

  it("status tells installed from not, and uninstall removes the unit", async () => {
    const home = dir();
    const env = { HOME: home, XDG_CONFIG_HOME: "" };
    const before = JSON.parse((await runCli(home, ["service", "status", "--json"], env)).stdout);
    expect(before).toMatchObject({ kind: "systemd-user", installed: false, manager_reachable: false });
    expect((await runCli(home, ["service", "install"], env)).code).toBe(0);
    const after = JSON.parse((await runCli(home, ["service", "status", "--json"], env)).stdout);
    expect(after).toMatchObject({ installed: true, current: true });
    const removed = await runCli(home, ["service", "uninstall"], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain("· systemctl --user disable --now spar");
    expect(existsSync(join(home, ".config/systemd/user/spar.service"))).toBe(false);
    expect(JSON.parse((await runCli(home, ["service", "status", "--json"], env)).stdout).installed).toBe(
      false,
    );
  });

  plistIt("on macOS, install writes a launchd agent that a plist parser reads as intended", async () => {
    if (!PYTHON) throw new Error("CI is set but python3 is missing: install Debian's python3 package");
    const home = dir();
    const data = join(home, "data");
    const result = await runCli(data, ["service", "install"], {
      HOME: home,
      SPAR_SERVICE_PLATFORM: "darwin",
    });
    expect(result.code, result.stderr).toBe(0);
    const plist = join(home, "Library/LaunchAgents/dev.spar.daemon.plist");
    // Not on a Mac: launchctl is printed to run there, never run here.
    expect(result.stdout).toContain(`· launchctl bootstrap gui/${process.getuid?.()} ${plist}`);
    const parsed = JSON.parse(
      execFileSync(
        PYTHON,
        ["-c", "import json,plistlib,sys; print(json.dumps(plistlib.load(open(sys.argv[1],'rb'))))", plist],
        {
          encoding: "utf8",
        },
      ),
    );
    expect(parsed).toEqual({
      Label: "dev.spar.daemon",
      ProgramArguments: [process.execPath, SPAR_BIN, "start"],
      EnvironmentVariables: { SPAR_HOME: data, SPAR_LOG_STDERR: "0" },
      WorkingDirectory: data,
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
      ThrottleInterval: 5,
      ProcessType: "Background",
      Umask: 63,
      StandardOutPath: join(data, "logs/spar.out"),
      StandardErrorPath: join(data, "logs/spar.out"),
    });
    expect(existsSync(join(data, "logs"))).toBe(true);
  });
});
