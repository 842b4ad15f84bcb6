import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initHome } from "./init-home.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

describe("initHome", () => {
  it("reads .env's keys without copying them into the environment it was given", () => {
    const home = mkdtempSync(join(tmpdir(), "spar-init-"));
    homes.push(home);
    writeFileSync(join(home, ".env"), "ANTHROPIC_API_KEY=sk-ant-from-dotenv-0000\n", { mode: 0o600 });
    const env: NodeJS.ProcessEnv = { PATH: "/usr/bin" };
    const result = initHome(home, env);
    expect(result.default_model.provider).toBe("anthropic");
    // `spar start --detach` starts the daemon with the CLI's own environment: it must not hold them.
    expect(env).toEqual({ PATH: "/usr/bin" });
    expect(process.env.ANTHROPIC_API_KEY).toBeUndefined();
  });
});
