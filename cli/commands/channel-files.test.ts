/**
 * The config.toml and .env edits of `spar channel`, on real files in a temporary data dir: a table
 * replaced where it stands with every comment and other table kept, added, removed, a file whose
 * table cannot be cut out by its header rewritten from its data, a config the daemon would refuse
 * put back as it was, and .env lines set and removed with the file left 0600.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "smol-toml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseDotEnv } from "../../lib/home.js";
import { checkTable, readEnvFile, tableAt, updateEnvFile, writeTables } from "./channel-files.js";

let home: string;
const configText = () => readFileSync(join(home, "config.toml"), "utf8");
const writeConfigText = (text: string) => writeFileSync(join(home, "config.toml"), text, { mode: 0o600 });

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "spar-channel-files-"));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const BASE = `# Spar configuration.
api_listen = "127.0.0.1:6660"

# the webhook listener
[channels]
webhook_listen = "127.0.0.1:6661" # local only

# my tunnel
[tunnel]
mode = "quick"

# last
[agent]
max_iterations = 5
`;

describe("writeTables", () => {
  it("replaces a table where it stands, keeping comments and the other tables", () => {
    writeConfigText(BASE);
    writeTables(home, { tunnel: { mode: "manual", url: "https://bots.example.com" } });
    expect(configText()).toBe(
      BASE.replace(
        '[tunnel]\nmode = "quick"\n',
        '[tunnel]\nmode = "manual"\nurl = "https://bots.example.com"\n',
      ),
    );
  });

  it("adds a table that is not there, and removes it again", () => {
    writeConfigText(BASE);
    writeTables(home, { "channels.slack": { allowlist: ["U0ALLOWED1"], fighter: "spar" } });
    expect(configText()).toBe(`${BASE}\n[channels.slack]\nallowlist = [ "U0ALLOWED1" ]\nfighter = "spar"\n`);
    writeTables(home, { "channels.slack": undefined, tunnel: undefined });
    expect(configText()).toBe(BASE.replace('# my tunnel\n[tunnel]\nmode = "quick"\n\n', ""));
  });

  it("rewrites from the parsed data a file whose table is written as dotted keys", () => {
    writeConfigText('# header\napi_listen = "127.0.0.1:6660"\n\n[channels]\ntelegram.allowlist = [1]\n');
    writeTables(home, { "channels.telegram": { allowlist: [42], fighter: "spar" } });
    expect(configText().startsWith("# header\n")).toBe(true);
    const data = parse(configText());
    expect(tableAt(data, "channels.telegram")).toEqual({ allowlist: [42], fighter: "spar" });
    expect(data.api_listen).toBe("127.0.0.1:6660");
  });

  it("puts the file back when the daemon would refuse the new config", () => {
    writeConfigText(BASE);
    expect(() => writeTables(home, { tunnel: { mode: "manual" } })).toThrow(
      /missing required key "tunnel\.url"/,
    );
    expect(configText()).toBe(BASE);
  });

  it("checks a table against its plugin's schema and fills in the defaults, writing nothing", () => {
    writeConfigText(BASE);
    expect(checkTable(home, "channels.telegram", { allowlist: [42] })).toMatchObject({
      allowlist: [42],
      path: "/telegram",
      token_env: "TELEGRAM_BOT_TOKEN",
    });
    expect(() => checkTable(home, "tunnel", { mode: "sideways" })).toThrow(/"tunnel\.mode" must be one of/);
    expect(configText()).toBe(BASE);
  });
});

describe("updateEnvFile", () => {
  it("sets, replaces and removes variables, keeping other lines, and leaves the file 0600", () => {
    const path = join(home, ".env");
    writeFileSync(path, "# keys\nOPENAI_API_KEY=sk-1\nexport TELEGRAM_BOT_TOKEN=old\nOLD=x\n", {
      mode: 0o644,
    });
    chmodSync(path, 0o644);
    updateEnvFile(home, { TELEGRAM_BOT_TOKEN: "123:new", SPACED: "a b #c", QUOTED: `it's "x"` }, ["OLD"]);
    expect(readFileSync(path, "utf8").split("\n").slice(0, 3)).toEqual([
      "# keys",
      "OPENAI_API_KEY=sk-1",
      "TELEGRAM_BOT_TOKEN=123:new",
    ]);
    expect(readEnvFile(home)).toEqual({
      OPENAI_API_KEY: "sk-1",
      TELEGRAM_BOT_TOKEN: "123:new",
      SPACED: "a b #c",
      QUOTED: `it's "x"`,
    });
    expect(parseDotEnv(readFileSync(path, "utf8")).OLD).toBeUndefined();
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("creates the file 0600 when there is none", () => {
    updateEnvFile(home, { SLACK_BOT_TOKEN: "xoxb-1" });
    expect(readFileSync(join(home, ".env"), "utf8")).toBe("SLACK_BOT_TOKEN=xoxb-1\n");
    expect(statSync(join(home, ".env")).mode & 0o777).toBe(0o600);
  });
});
