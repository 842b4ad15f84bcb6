// 8. The sandbox's cost: one process that does nothing (`true`) started the way shell_exec starts
// it (lib/sandbox from dist/: host-side checks, bubblewrap, prlimit, a pids cgroup for a root daemon),
// beside the same call with [sandbox] mode = "off" and beside a bare child_process spawn, in the same
// run; and the same sandboxed call with network (the egress proxy and its in-sandbox forwarder).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../suite/daemon.mjs";
import { figure } from "../suite/report.mjs";
import { median, medianSpread } from "../suite/stats.mjs";

const SETTINGS = {
  cpu_s: 60,
  memory_mb: 8192,
  processes: 256,
  file_size_mb: 512,
  tmp_mb: 512,
  open_files: 1024,
  allow_private: [],
};

async function times(runs, once) {
  await once();
  const out = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await once();
    out.push(performance.now() - t);
  }
  return out;
}

function bareSpawn() {
  return new Promise((done, fail) => {
    const child = spawn("/bin/true", [], { env: {}, stdio: "ignore", detached: true });
    child.once("error", fail);
    child.once("close", done);
  });
}

export async function sandbox({ runs }) {
  const { createSandbox } = await import(join(ROOT, "dist", "lib", "sandbox", "index.js"));
  const home = mkdtempSync(join(tmpdir(), "spar-bench-sandbox-"));
  try {
    const workspace = mkdtempSync(join(home, "ws-"));
    const call =
      (box, extra = {}) =>
      () =>
        box.run({
          argv: ["true"],
          workspace,
          cwd: workspace,
          path: "/usr/local/bin:/usr/bin:/bin",
          timeoutMs: 10_000,
          maxOutputBytes: 65_536,
          signal: new AbortController().signal,
          ...extra,
        });
    const boxed = createSandbox({ ...SETTINGS, mode: "required" }, home);
    const status = await boxed.status();
    if (!status.ready) throw new Error(`no sandbox here: ${status.problem}`);
    const off = createSandbox({ ...SETTINGS, mode: "off" }, home);
    // Interleaved in rounds, so a slow moment of the machine falls on each kind alike.
    const kinds = { bare: [], off: [], sandboxed: [], network: [] };
    const rounds = 5;
    for (let r = 0; r < rounds; r++) {
      kinds.bare.push(...(await times(runs / rounds, bareSpawn)));
      kinds.off.push(...(await times(runs / rounds, call(off))));
      kinds.sandboxed.push(...(await times(runs / rounds, call(boxed))));
      kinds.network.push(...(await times(runs / rounds, call(boxed, { network: {} }))));
    }
    const bare = median(kinds.bare);
    return {
      title: "8. The sandbox: one shell_exec of `true`",
      notes: [
        `${runs} calls of each kind, in ${rounds} interleaved rounds, after one untimed call each; ${status.kind} (${status.program}), processes limited by ${status.processes_limit}`,
        "sandboxed: bubblewrap (new namespaces, read-only system, the workspace, private /tmp and HOME) around prlimit around the program",
        "with network: plus the egress proxy on a Unix socket and its forwarder (node) inside the sandbox",
      ],
      figures: [
        figure({
          label: "shell_exec `true`, sandboxed",
          measured: medianSpread(kinds.sandboxed, "ms", 1),
          baseline: `[sandbox] mode = "off" ${medianSpread(kinds.off, "ms", 1)}`,
          ratio: median(kinds.sandboxed) / median(kinds.off),
        }),
        figure({
          label: "shell_exec `true`, sandboxed with network",
          measured: medianSpread(kinds.network, "ms", 1),
          baseline: `sandboxed without ${medianSpread(kinds.sandboxed, "ms", 1)}`,
          ratio: median(kinds.network) / median(kinds.sandboxed),
        }),
        figure({
          label: '[sandbox] mode = "off" (unsandboxed spawn through the move\'s code)',
          measured: medianSpread(kinds.off, "ms", 1),
          baseline: `bare child_process.spawn of /bin/true ${medianSpread(kinds.bare, "ms", 1)}`,
          ratio: median(kinds.off) / bare,
        }),
      ],
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
