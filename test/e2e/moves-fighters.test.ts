/**
 * fighter_spawn through the real daemon: the scripted model makes a fighter spawn another; the new
 * fighter holds only what its spawner holds, with the spawner's limits, and nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Capability } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

describe("moves-fighters: fighter_spawn", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  const spawnFighter = (name: string, capabilities: Record<string, unknown>[]) =>
    daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
  const spawnVia = async (spawner: string, args: Record<string, unknown>) => {
    fake.enqueue({ tool_calls: [{ name: "fighter_spawn", arguments: args }] });
    const reply = await daemon.request("POST", `/api/v1/fighters/${spawner}/message`, { message: "spawn" });
    expect(reply.status).toBe(200);
    return JSON.parse(fake.calls().at(-1)?.tool_results.at(-1) ?? "null");
  };
  const grantsOf = async (name: string) =>
    (await daemon.request<{ capabilities: Capability[] }>("GET", `/api/v1/fighters/${name}`)).body
      .capabilities;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // The lead's scope is the operator's to allow.
    writeConfig(
      home,
      port,
      fake.url,
      '\n[creed]\nreflect = false\n\n[moves.files]\nallowed_scopes = ["/srv/shared"]\n' +
        // This suite tests fighter_spawn, not approvals: it runs unasked, as a rule lets it.
        allowUnasked(["fighter_spawn"]),
    );
    daemon = await startDaemon(home, port);
    expect(
      (
        await spawnFighter("lead", [
          { type: "agent_spawn" },
          { type: "memory" },
          { type: "file_read", scope: "/srv/shared" },
        ])
      ).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("passes on only what the spawner holds, with the spawner's own limits", async () => {
    const made = await spawnVia("lead", {
      name: "helper",
      system_prompt: "You help the lead.",
      capabilities: ["memory", "file_read"],
    });
    expect(made).toMatchObject({ name: "helper", capabilities: ["memory", "file_read"] });
    expect(await grantsOf("helper")).toEqual([
      { type: "memory" },
      { type: "file_read", scope: "/srv/shared" },
    ]);
  });

  it("refuses a capability the spawner lacks, full_access, a taken name, and a fighter without agent_spawn", async () => {
    expect(
      await spawnVia("lead", { name: "rogue", system_prompt: "x", capabilities: ["shell_exec"] }),
    ).toEqual({
      error: {
        code: "CAPABILITY_DENIED",
        message:
          'you do not hold "shell_exec", so you cannot give it; you hold: agent_spawn, memory, file_read',
      },
    });
    expect(
      (await spawnVia("lead", { name: "rogue", system_prompt: "x", capabilities: ["full_access"] })).error
        .code,
    ).toBe("CAPABILITY_DENIED");
    expect((await spawnVia("lead", { name: "helper", system_prompt: "again" })).error.code).toBe("CONFLICT");
    expect((await daemon.request("GET", "/api/v1/fighters/rogue")).status).toBe(404);

    expect((await spawnFighter("loner", [{ type: "memory" }])).status).toBe(201);
    expect((await spawnVia("loner", { name: "child", system_prompt: "x" })).error.code).toBe(
      "CAPABILITY_DENIED",
    );
  });
});
