import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { checkSections } from "../../kernel/host/config-sections.js";
import { readManifest } from "../../kernel/host/plugin-manifest.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import {
  describeServer,
  type McpSettings,
  redact,
  type StdioSpec,
  secretsOf,
  serverSpecs,
} from "./settings.js";

const plugin = { manifest: readManifest(import.meta.dirname, KERNEL_VERSION), dir: import.meta.dirname };

/** A daemon's environment: what every server may see, and the secrets none may unless named. */
const DAEMON_ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/home/spar",
  USER: "spar",
  LANG: "C.UTF-8",
  OPENAI_API_KEY: "sk-provider-secret",
  ANTHROPIC_API_KEY: "sk-ant-provider-secret",
  SPAR_MASTER_KEY: "master-key-secret",
  SPAR_HOME: "/home/spar/.spar",
  GITHUB_TOKEN: "ghp_secret_token",
  CALENDAR_ID: "team-calendar",
  DEBUG: "1",
};

/** config.toml through the kernel's check against this plugin's schema, then into server specs. */
function load(toml: string, daemonEnv: NodeJS.ProcessEnv = DAEMON_ENV) {
  const home = mkdtempSync(join(tmpdir(), "spar-mcp-settings-"));
  const file = join(home, "config.toml");
  writeFileSync(file, toml);
  const checked = checkSections(loadConfig(home, {}), [{ ...plugin, source: "bundled" }], file);
  const mcp = checked.mcp as unknown as McpSettings;
  return { home, mcp, specs: () => serverSpecs(mcp, home, "config.toml", daemonEnv) };
}

describe("the [mcp] table", () => {
  it("defaults to no servers and a 30 s start timeout", () => {
    expect(load("").mcp).toEqual({ start_timeout_s: 30, servers: {} });
  });

  it("reads a stdio server and an HTTP server", () => {
    const { home, specs } = load(
      [
        "[mcp.servers.cal]",
        'command = "node"',
        'args = ["calendar.mjs", "--file", "events.json"]',
        'env = { CALENDAR_TOKEN = "s3cret-token" }',
        'cwd = "servers"',
        "[mcp.servers.mail-2]",
        'url = "https://mail.example.test/mcp"',
        'headers = { Authorization = "Bearer abc123" }',
        'tools = ["send_email"]',
      ].join("\n"),
    );
    expect(specs()).toEqual([
      {
        name: "cal",
        transport: "stdio",
        command: "node",
        args: ["calendar.mjs", "--file", "events.json"],
        env: {
          PATH: "/usr/local/bin:/usr/bin:/bin",
          HOME: "/home/spar",
          USER: "spar",
          LANG: "C.UTF-8",
          CALENDAR_TOKEN: "s3cret-token",
        },
        pass_env: [],
        missing_env: [],
        cwd: join(home, "servers"),
      },
      {
        name: "mail-2",
        transport: "http",
        url: "https://mail.example.test/mcp",
        headers: { Authorization: "Bearer abc123" },
        tools: ["send_email"],
      },
    ]);
  });

  it("runs a stdio server in the data dir by default, with only the daemon's non-secret basics", () => {
    const { home, specs } = load('[mcp.servers.cal]\ncommand = "/usr/bin/env"\n');
    expect(specs()[0]).toMatchObject({ cwd: home, args: [], pass_env: [], missing_env: [] });
    expect((specs()[0] as StdioSpec).env).toEqual({
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: "/home/spar",
      USER: "spar",
      LANG: "C.UTF-8",
    });
    expect(load('[mcp.servers.cal]\ncommand = "/usr/bin/env"\n', {}).specs()[0]).toMatchObject({ env: {} });
  });

  it("gives a server none of the daemon's secrets unless pass_env names them", () => {
    const { specs } = load(
      [
        "[mcp.servers.gh]",
        'command = "github-server"',
        'pass_env = ["GITHUB_TOKEN", "CALENDAR_ID"]',
        'env = { PATH = "/opt/gh/bin", LOG_LEVEL = "debug" }',
      ].join("\n"),
    );
    const spec = specs()[0] as StdioSpec;
    expect(spec.env).toEqual({
      PATH: "/opt/gh/bin",
      HOME: "/home/spar",
      USER: "spar",
      LANG: "C.UTF-8",
      GITHUB_TOKEN: "ghp_secret_token",
      CALENDAR_ID: "team-calendar",
      LOG_LEVEL: "debug",
    });
    for (const secret of [
      "sk-provider-secret",
      "sk-ant-provider-secret",
      "master-key-secret",
      "/home/spar/.spar",
    ])
      expect(JSON.stringify(spec)).not.toContain(secret);
    // What pass_env brings is hidden in messages whatever its name; config values only by their names.
    expect(secretsOf(spec)).toEqual(["ghp_secret_token", "team-calendar"]);
  });

  it("says which pass_env variables the daemon's environment lacks", () => {
    const { specs } = load(
      '[mcp.servers.gh]\ncommand = "x"\npass_env = ["GITHUB_TOKEN", "NOT_SET_ANYWHERE"]\n',
    );
    expect(specs()[0]).toMatchObject({
      pass_env: ["GITHUB_TOKEN", "NOT_SET_ANYWHERE"],
      missing_env: ["NOT_SET_ANYWHERE"],
    });
  });

  it("refuses SPAR_ variables in pass_env, and a variable in both env and pass_env", () => {
    expect(() => load('[mcp.servers.cal]\ncommand = "node"\npass_env = ["SPAR_MASTER_KEY"]\n')).toThrow(
      '"mcp.servers.cal.pass_env.0" must be a variable name (letters, digits and _, not starting with a digit or with SPAR_)',
    );
    expect(() =>
      load('[mcp.servers.cal]\ncommand = "node"\npass_env = ["A_TOKEN"]\nenv = { A_TOKEN = "x" }\n').specs(),
    ).toThrow(
      '[mcp.servers.cal] names A_TOKEN in both "env" (a value) and "pass_env" (the daemon\'s value); keep one',
    );
    expect(() =>
      load('[mcp.servers.cal]\nurl = "http://127.0.0.1:1/mcp"\npass_env = ["A_TOKEN"]\n').specs(),
    ).toThrow('has a url, so "pass_env" (for command servers) has no use');
  });

  it("refuses server names outside lowercase letters, digits, _ and -", () => {
    expect(() => load('[mcp.servers.Cal]\ncommand = "node"\n')).toThrow(
      '"mcp.servers" must be named with lowercase letters, digits, _ and -',
    );
    expect(() => load(`[mcp.servers.${"a".repeat(33)}]\ncommand = "node"\n`)).toThrow("up to 32");
  });

  it("reads trusted = true (its results do not taint a turn); absent or false, the server is untrusted", () => {
    const { specs } = load(
      [
        "[mcp.servers.mine]",
        'command = "node"',
        "trusted = true",
        "[mcp.servers.mail]",
        'url = "https://mail.example.test/mcp"',
        "trusted = false",
        "[mcp.servers.web]",
        'command = "node"',
      ].join("\n"),
    );
    expect(specs().map((s) => [s.name, s.trusted])).toEqual([
      ["mine", true],
      ["mail", undefined],
      ["web", undefined],
    ]);
    expect(() => load('[mcp.servers.cal]\ncommand = "node"\ntrusted = "yes"\n')).toThrow(
      '"mcp.servers.cal.trusted"',
    );
  });

  it("refuses unknown keys, with their path", () => {
    expect(() => load('[mcp.servers.cal]\ncommand = "node"\nenviron = {}\n')).toThrow(
      'unknown key "mcp.servers.cal.environ"',
    );
    expect(() => load("[mcp]\nstart_timeout = 5\n")).toThrow('unknown key "mcp.start_timeout"');
  });

  it("refuses SPAR_ variables in a server's environment", () => {
    expect(() => load('[mcp.servers.cal]\ncommand = "node"\nenv = { SPAR_HOME = "/tmp" }\n')).toThrow(
      "not starting with a digit or with SPAR_",
    );
  });

  it("refuses a header value on two lines (header injection)", () => {
    expect(() =>
      load('[mcp.servers.m]\nurl = "http://127.0.0.1:1/mcp"\nheaders = { X-A = "a\\r\\nX-B: b" }\n'),
    ).toThrow('"mcp.servers.m.headers.X-A" must be one line');
  });

  it("wants exactly one transport, and only its keys", () => {
    expect(() => load('[mcp.servers.cal]\nargs = ["x"]\n').specs()).toThrow(
      '[mcp.servers.cal] needs "command" (a program spoken to over stdio, with "args" and "env") or "url"',
    );
    expect(() =>
      load('[mcp.servers.cal]\ncommand = "node"\nurl = "http://127.0.0.1:1/mcp"\n').specs(),
    ).toThrow('has both "command" and "url"');
    expect(() =>
      load('[mcp.servers.cal]\nurl = "http://127.0.0.1:1/mcp"\nenv = { A = "b" }\n').specs(),
    ).toThrow('has a url, so "env" (for command servers) has no use');
    expect(() => load('[mcp.servers.cal]\ncommand = "node"\nheaders = { A = "b" }\n').specs()).toThrow(
      'runs a command, so "headers" (for url servers) has no use',
    );
    expect(() => load('[mcp.servers.cal]\nurl = "ftp://example.test/mcp"\n')).toThrow(
      '"mcp.servers.cal.url" must be an http:// or https:// URL',
    );
  });
});

describe("what is shown and what is hidden", () => {
  const stdio = {
    name: "cal",
    transport: "stdio" as const,
    command: "npx",
    args: ["calendar-server", "--token", "from-args"],
    env: { GOOGLE_TOKEN: "ya29.secret-value", CALENDAR_ID: "primary-calendar", API_KEY: "abc" },
    pass_env: [],
    missing_env: [],
    cwd: "/tmp",
  };
  const http = {
    name: "mail",
    transport: "http" as const,
    url: "https://user:p%40ss@mail.example.test/mcp?key=query-secret",
    headers: { Authorization: "Bearer tok-12345", Accept: "application/json" },
  };

  it("describes a server by its command, or its URL without credentials or query", () => {
    expect(describeServer(stdio)).toBe("stdio: npx");
    expect(describeServer(http)).toBe("http: https://mail.example.test/mcp");
  });

  it("hides values of credential-named variables and headers, and the URL's credentials", () => {
    expect(secretsOf(stdio)).toEqual(["ya29.secret-value"]);
    expect(secretsOf(http).sort()).toEqual([
      "Bearer tok-12345",
      "p%40ss",
      "p@ss",
      "query-secret",
      "tok-12345",
      "user",
    ]);
    expect(redact("token tok-12345 and Bearer tok-12345, key=query-secret", secretsOf(http))).toBe(
      "token [redacted] and [redacted], key=[redacted]",
    );
  });
});
