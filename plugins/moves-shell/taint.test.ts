/**
 * A command run with network access may print anything it reached: its result taints the turn
 * (`shell with network: <hosts>`). Without network it reads only the workspace and the read-only
 * system, and taints nothing by itself.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import type { Capability, RingServices } from "../../sdk/index.js";
import { type AppliedMoves, applyMoves, moveContext, TEST_FIGHTER } from "../../test/helpers/moves.js";
import plugin, { shellTaint } from "./index.js";

describe("moves-shell taints the turn", () => {
  let home: string;
  let workspace: string;
  let moves: AppliedMoves;

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), "spar-shell-taint-"));
    workspace = join(home, "workspaces", "scout");
    mkdirSync(workspace, { recursive: true });
    moves = await applyMoves(
      plugin,
      {
        home,
        config: loadConfig(home, {}),
        env: { PATH: process.env.PATH },
        ring: { moves: { mounts: async () => [] } } as unknown as RingServices,
      },
      { "moves.shell": { timeout_s: 20, max_output_bytes: 65_536, path: "/usr/bin:/bin" } },
    );
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  const run = async (capabilities: Capability[]) => {
    const fighter = { ...TEST_FIGHTER, manifest: { ...TEST_FIGHTER.manifest, capabilities } };
    const context = moveContext({ fighter, workspace, grants: [{ type: "shell_exec", pattern: "*" }] });
    await (await moves.move("shell_exec")).run({ argv: ["echo", "hi"] }, context);
    return context.marks;
  };

  it("with a network grant: the hosts it may reach", async () => {
    expect(
      await run([{ type: "shell_exec" }, { type: "network", hosts: ["api.example.com", "*.example.org"] }]),
    ).toEqual([
      { kind: "web", detail: "shell with network: api.example.com, *.example.org", move: "shell_exec" },
    ]);
    expect(await run([{ type: "shell_exec" }, { type: "network" }])).toEqual([
      { kind: "web", detail: "shell with network: any public host", move: "shell_exec" },
    ]);
  });

  it("without one: nothing", async () => {
    expect(await run([{ type: "shell_exec" }])).toEqual([]);
  });

  it("names every list a host had to be on when callers limit it too", () => {
    const listed = (hosts: string[]) => ({ patterns: [], listed: hosts });
    expect(shellTaint({ hostSets: [listed(["a.example"]), listed(["a.example", "b.example"])] }).detail).toBe(
      "shell with network: a.example and also on a.example, b.example",
    );
  });
});
