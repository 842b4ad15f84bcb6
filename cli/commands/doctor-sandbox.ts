import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MASTER_KEY_FILE } from "../../lib/home.js";
import { createSandbox } from "../../lib/sandbox/index.js";
import type { SparConfig } from "../../sdk/config.js";

/**
 * The sandbox as the daemon would use it: which one, how its processes limit binds, and a probe that
 * proves it holds — a process in it that tries to read the data dir and its master key, and must fail.
 * `mode = "off"` and a required sandbox that cannot run are failures.
 */
export async function sandboxCheck(
  home: string,
  config: SparConfig,
  env: NodeJS.ProcessEnv,
): Promise<{ name: string; ok: boolean; detail: string }> {
  const name = "sandbox";
  if (config.sandbox.mode === "off") {
    return {
      name,
      ok: false,
      detail:
        '[sandbox] mode = "off": every process a fighter starts runs unsandboxed, as the daemon\'s user, able to read the data dir and reach the daemon; remove the setting to turn the sandbox back on',
    };
  }
  const sandbox = createSandbox(config.sandbox, home, env);
  const status = await sandbox.status();
  if (!status.ready) return { name, ok: false, detail: `required, and not available: ${status.problem}` };
  const workspace = mkdtempSync(join(tmpdir(), "spar-doctor-"));
  try {
    const probe = await sandbox.run({
      argv: [
        "/bin/sh",
        "-c",
        'cat "$0"/* "$0"/keys/* 2>/dev/null; ls -A "$0" 2>/dev/null | head -1',
        home,
        MASTER_KEY_FILE,
      ],
      workspace,
      cwd: workspace,
      path: "/usr/bin:/bin",
      timeoutMs: 10_000,
      maxOutputBytes: 4096,
      signal: AbortSignal.timeout(15_000),
    });
    const limit = {
      rlimit: "processes limited per sandbox (RLIMIT_NPROC in its user namespace)",
      cgroup: "processes limited per sandbox by a pids cgroup",
      none: "the processes limit is NOT enforced (a root daemon with no pids cgroup controller): a fork bomb runs until the timeout",
    }[status.processes_limit];
    if (probe.stdout.trim() !== "") {
      return {
        name,
        ok: false,
        detail: `${status.kind} (${status.program}) is in use, yet a probe in it read the data dir`,
      };
    }
    return {
      name,
      ok: true,
      detail: `${status.kind} (${status.program}); a probe process could not read the data dir; ${limit}`,
    };
  } catch (err) {
    return {
      name,
      ok: false,
      detail: `${status.kind} (${status.program}) failed its probe: ${(err as Error).message}`,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}
