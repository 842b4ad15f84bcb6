import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { checkSections } from "../../kernel/host/config-sections.js";
import { isLoopbackHost } from "../../lib/loopback.js";
import { type AuditInput, auditReport, auditSecurity, type FileFact } from "./security-audit.js";
import { gatherAuditInput, humanAccounts, parseUidRange } from "./security-facts.js";

const HOME = "/home/ada/.spar";

/** A freshly initialized data dir on a one-person machine, with the daemon running only `spar`. */
function facts(overrides: Partial<AuditInput> = {}): AuditInput {
  const file = (name: string, role: FileFact["role"], mode = 0o600): FileFact => ({
    path: name ? `${HOME}/${name}` : HOME,
    role,
    mode,
  });
  return {
    home: HOME,
    api_listen: "127.0.0.1:6660",
    api_listen_from_env: false,
    allow_unsigned_loopback: true,
    cors_origins: [],
    forced_skills: [],
    manifest_base_urls: [],
    authorized_keys: ["cli"],
    human_accounts: ["ada"],
    files: [
      file("", "data_dir", 0o700),
      file("master.key", "master_key"),
      file("keys/cli.key", "cli_key"),
      file("spar.db", "database"),
      file("keys", "key_dir", 0o700),
      file("keys/authorized", "key_dir", 0o700),
      file("keys/authorized/cli.pub", "authorized_key"),
      file("config.toml", "config"),
      file("plugins", "plugins_dir", 0o700),
    ],
    master_secret: {
      source: `${HOME}/master.key`,
      strength: { encoding: "raw", bytes: 32, repeated: false },
      database_exists: true,
    },
    channels: [],
    fighters: [{ name: "spar", capabilities: [{ type: "full_access" }] }],
    ...overrides,
  };
}

/** The facts with one file's mode changed (or a file added). */
function withMode(name: string, role: FileFact["role"], mode: number): AuditInput {
  const base = facts();
  const path = name ? `${HOME}/${name}` : HOME;
  const files = (base.files ?? []).filter((f) => f.path !== path);
  return { ...base, files: [...files, { path, role, mode }] };
}

describe("auditSecurity", () => {
  it("passes every check on a fresh single-user setup", () => {
    const report = auditReport(facts());
    expect(report.findings).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.skipped).toEqual([]);
    expect(report.passed.map((p) => p.check)).toEqual([
      "api_listen",
      "unsigned_loopback",
      "cors_origins",
      "file_permissions",
      "dotenv",
      "master_secret",
      "provider_keys",
      "manifest_base_urls",
      "channel_allowlists",
      "forced_skills",
      "full_access",
    ]);
  });

  describe("api_listen", () => {
    it.each(["127.0.0.1:6660", "127.8.9.1:1", "localhost:6660", "[::1]:6660", "[::ffff:127.0.0.1]:80"])(
      "passes on loopback %s",
      (api_listen) => {
        expect(auditSecurity(facts({ api_listen }))).toEqual([]);
      },
    );

    it("is high on any other address, saying whether a key can sign", () => {
      const [finding] = auditSecurity(facts({ api_listen: "0.0.0.0:6660" }));
      expect(finding).toMatchObject({ id: "api_listen", severity: "high" });
      expect(finding?.message).toBe(
        "the API listens on 0.0.0.0:6660, reachable from other machines; 1 authorized key(s) can sign requests (cli)",
      );
      expect(finding?.fix).toContain(`set api_listen = "127.0.0.1:6660" in ${HOME}/config.toml`);
      expect(finding?.fix).toContain("allow_unsigned_loopback = false");

      const unsigned = auditSecurity(facts({ api_listen: "[::]:7000", authorized_keys: [] }));
      expect(unsigned[0]?.message).toContain("no key is authorized to sign requests");
      expect(unsigned[0]?.fix).toContain('"127.0.0.1:7000"');
    });

    it("stays high with unsigned loopback off, and names SPAR_API_LISTEN when that set it", () => {
      const [finding] = auditSecurity(
        facts({ api_listen: "192.168.1.5:6660", api_listen_from_env: true, allow_unsigned_loopback: false }),
      );
      expect(finding?.severity).toBe("high");
      expect(finding?.fix).toMatch(/^unset SPAR_API_LISTEN/);
    });
  });

  describe("unsigned_loopback", () => {
    it("is medium when more than one person has an account", () => {
      const findings = auditSecurity(facts({ human_accounts: ["ada", "bob"] }));
      expect(findings).toEqual([expect.objectContaining({ id: "unsigned_loopback", severity: "medium" })]);
      expect(findings[0]?.message).toContain("2 user accounts (ada, bob)");
      expect(findings[0]?.fix).toBe(
        `set allow_unsigned_loopback = false under [auth] in ${HOME}/config.toml`,
      );
    });

    it("passes on a shared machine when unsigned requests are refused", () => {
      const report = auditReport(facts({ human_accounts: ["ada", "bob"], allow_unsigned_loopback: false }));
      expect(report.findings).toEqual([]);
      expect(report.passed).toContainEqual({
        check: "unsigned_loopback",
        detail: "unsigned requests are refused",
      });
    });

    it("lists a single-user machine as passed, and an uncounted one as skipped", () => {
      expect(auditReport(facts()).passed.find((p) => p.check === "unsigned_loopback")?.detail).toContain(
        "ada is the only user",
      );
      expect(auditReport(facts({ human_accounts: undefined })).skipped).toEqual([
        { check: "unsigned_loopback", reason: "could not count the user accounts on this machine" },
      ]);
    });
  });

  describe("cors_origins", () => {
    it("is medium when a foreign origin may call the API unsigned", () => {
      const findings = auditSecurity(
        facts({ cors_origins: ["http://localhost:3000", "https://app.example"] }),
      );
      expect(findings).toHaveLength(1);
      expect(findings[0]).toMatchObject({ id: "cors_origins", severity: "medium" });
      expect(findings[0]?.message).toContain("https://app.example");
      expect(findings[0]?.message).not.toContain("localhost:3000");
    });

    it("passes for loopback origins, or when every request must be signed", () => {
      expect(auditSecurity(facts({ cors_origins: ["http://127.0.0.1:5173"] }))).toEqual([]);
      expect(
        auditSecurity(facts({ cors_origins: ["https://app.example"], allow_unsigned_loopback: false })),
      ).toEqual([]);
    });
  });

  describe("file_permissions", () => {
    it.each([
      ["master.key", "master_key"],
      ["keys/cli.key", "cli_key"],
      ["spar.db", "database"],
      ["spar.db-wal", "database"],
      ["spar.db-shm", "database"],
      ["spar.db.salt", "database"],
    ] as const)("is high when %s is readable by others, with the chmod that fixes it", (name, role) => {
      const findings = auditSecurity(withMode(name, role, 0o644));
      expect(findings).toEqual([
        {
          id: `file_permissions:${name}`,
          severity: "high",
          message: expect.stringContaining(`${HOME}/${name} has mode 0644: group and others can read it`),
          fix: `chmod 600 ${HOME}/${name}`,
        },
      ]);
    });

    it("flags group bits alone", () => {
      const findings = auditSecurity(withMode("master.key", "master_key", 0o640));
      expect(findings[0]?.message).toContain("mode 0640: group can read it");
    });

    it("is high when the data dir is open to others", () => {
      const findings = auditSecurity(withMode("", "data_dir", 0o755));
      expect(findings).toEqual([
        expect.objectContaining({ id: "file_permissions:.", severity: "high", fix: `chmod 700 ${HOME}` }),
      ]);
      expect(findings[0]?.message).toContain("group and others can read and enter it");
    });

    it("is medium for a readable authorized key, high for a writable one", () => {
      const readable = auditSecurity(withMode("keys/authorized/cli.pub", "authorized_key", 0o644));
      expect(readable).toEqual([
        expect.objectContaining({
          id: "file_permissions:keys/authorized/cli.pub",
          severity: "medium",
          fix: `chmod 600 ${HOME}/keys/authorized/cli.pub`,
        }),
      ]);
      const writable = auditSecurity(withMode("keys/authorized/ci.pub", "authorized_key", 0o666));
      expect(writable[0]?.severity).toBe("high");
    });

    it("flags only write access on config.toml and the key and plugin dirs", () => {
      expect(auditSecurity(withMode("config.toml", "config", 0o644))).toEqual([]);
      expect(auditSecurity(withMode("plugins", "plugins_dir", 0o755))).toEqual([]);
      expect(auditSecurity(withMode("config.toml", "config", 0o664))[0]).toMatchObject({
        severity: "high",
        fix: `chmod 600 ${HOME}/config.toml`,
      });
      expect(auditSecurity(withMode("keys/authorized", "key_dir", 0o777))[0]?.message).toContain(
        "whoever can write here can authorize a key",
      );
      expect(auditSecurity(withMode("plugins", "plugins_dir", 0o757))[0]?.message).toContain(
        "others can write it",
      );
    });

    it("quotes a path the shell would split", () => {
      const base = facts({ home: "/home/ada/my spar" });
      const findings = auditSecurity({
        ...base,
        files: [{ path: "/home/ada/my spar/master.key", role: "master_key", mode: 0o644 }],
      });
      expect(findings[0]?.fix).toBe("chmod 600 '/home/ada/my spar/master.key'");
    });

    it("is skipped where modes are not POSIX", () => {
      const report = auditReport(facts({ files: undefined }));
      expect(report.skipped.map((s) => s.check)).toEqual(["file_permissions", "dotenv"]);
    });
  });

  describe("dotenv", () => {
    it("is high when .env is readable by group or others", () => {
      for (const mode of [0o644, 0o640, 0o604]) {
        const findings = auditSecurity(withMode(".env", "dotenv", mode));
        expect(findings).toEqual([
          expect.objectContaining({ id: "dotenv", severity: "high", fix: `chmod 600 ${HOME}/.env` }),
        ]);
      }
    });

    it("passes when .env is private or absent", () => {
      const report = auditReport(withMode(".env", "dotenv", 0o600));
      expect(report.passed).toContainEqual({ check: "dotenv", detail: ".env is private" });
      expect(auditReport(facts()).passed).toContainEqual({
        check: "dotenv",
        detail: "no .env in the data dir",
      });
    });
  });

  describe("channel_allowlists", () => {
    it("is high for each channel with no allowlist, an empty one or a wildcard", () => {
      const findings = auditSecurity(
        facts({
          channels: [
            { platform: "telegram", allowlist: undefined },
            { platform: "slack", allowlist: [] },
            { platform: "discord", allowlist: ["*"] },
            { platform: "matrix", allowlist: ["@ada:example.org"] },
          ],
        }),
      );
      expect(findings.map((f) => [f.id, f.severity])).toEqual([
        ["channel_allowlists:telegram", "high"],
        ["channel_allowlists:slack", "high"],
        ["channel_allowlists:discord", "high"],
      ]);
      expect(findings[0]?.fix).toContain("under [channels.telegram]");
    });

    it("passes when every channel has an allowlist", () => {
      const report = auditReport(facts({ channels: [{ platform: "telegram", allowlist: [123456789] }] }));
      expect(report.findings).toEqual([]);
      expect(report.passed).toContainEqual({
        check: "channel_allowlists",
        detail: "1 channel(s), each with an allowlist",
      });
    });
  });

  describe("full_access", () => {
    it("is medium for each fighter but spar holding full_access", () => {
      const findings = auditSecurity(
        facts({
          fighters: [
            { name: "spar", capabilities: [{ type: "full_access" }] },
            { name: "coder2", capabilities: [{ type: "memory" }, { type: "full_access" }] },
            { name: "root-bot", capabilities: [{ type: "full_access" }] },
            { name: "oracle", capabilities: [{ type: "memory" }] },
          ],
        }),
      );
      expect(findings.map((f) => [f.id, f.severity])).toEqual([
        ["full_access:coder2", "medium"],
        ["full_access:root-bot", "medium"],
      ]);
      expect(findings[0]?.message).toContain("fighter coder2 has full_access");
      const spaced = auditSecurity(
        facts({ fighters: [{ name: "my bot", capabilities: [{ type: "full_access" }] }] }),
      );
      expect(spaced[0]?.fix).toMatch(/^spar fighter kill 'my bot', then/);
    });

    it("is skipped, not failed, without the daemon", () => {
      const report = auditReport(facts({ fighters: { unavailable: "the daemon is not running" } }));
      expect(report.ok).toBe(true);
      expect(report.skipped).toEqual([
        { check: "provider_keys", reason: "the daemon is not running" },
        { check: "full_access", reason: "the daemon is not running" },
      ]);
    });
  });

  describe("master_secret", () => {
    const secret = (master_secret: AuditInput["master_secret"]) => facts({ master_secret });

    it("passes 32 raw bytes and 64 hex characters, saying how they were counted", () => {
      expect(auditReport(facts()).passed).toContainEqual({
        check: "master_secret",
        detail: `${HOME}/master.key carries 32 bytes`,
      });
      const hex = secret({
        source: "SPAR_MASTER_KEY",
        strength: { encoding: "hex", bytes: 32, repeated: false },
        database_exists: false,
      });
      expect(auditReport(hex).passed).toContainEqual({
        check: "master_secret",
        detail: "SPAR_MASTER_KEY carries 32 bytes (hex-decoded)",
      });
    });

    it("is high for an existing database made with a short secret, with an honest fix", () => {
      const report = auditReport(
        secret({
          source: "SPAR_MASTER_KEY",
          strength: { encoding: "raw", bytes: 1, repeated: true },
          database_exists: true,
        }),
      );
      expect(report.ok).toBe(false);
      expect(report.findings).toEqual([
        {
          id: "master_secret",
          severity: "high",
          message: expect.stringMatching(
            /^the master secret \(SPAR_MASTER_KEY\) carries 1 byte, fewer than the 32 it needs .*; the database was created with it$/,
          ),
          fix: expect.stringContaining("unset SPAR_MASTER_KEY (and remove it from .env)"),
        },
      ]);
      expect(report.findings[0]?.fix).toContain("spar rekey --yes");
    });

    it("flags a long secret that is one byte repeated, and fixes a fresh one by replacing it", () => {
      const [finding] = auditSecurity(
        secret({
          source: `${HOME}/master.key`,
          strength: { encoding: "raw", bytes: 40, repeated: true },
          database_exists: false,
        }),
      );
      expect(finding).toEqual({
        id: "master_secret",
        severity: "high",
        message: `the master secret (${HOME}/master.key) is one byte repeated, the first thing a guesser tries`,
        fix: `delete ${HOME}/master.key and run spar init, which writes 32 random bytes`,
      });
    });

    it("is skipped when there is no secret yet", () => {
      const report = auditReport(facts({ master_secret: { unavailable: "no master secret yet" } }));
      expect(report.skipped).toEqual([{ check: "master_secret", reason: "no master secret yet" }]);
    });
  });

  it("sorts findings most severe first and is not ok with a high one", () => {
    const report = auditReport({
      ...withMode("master.key", "master_key", 0o644),
      human_accounts: ["ada", "bob"],
    });
    expect(report.findings.map((f) => f.severity)).toEqual(["high", "medium"]);
    expect(report.ok).toBe(false);
    expect(auditReport(facts({ human_accounts: ["ada", "bob"] })).ok).toBe(true);
  });
});

describe("provider_keys and manifest_base_urls", () => {
  it("flags a stored fighter whose model breaks the key pairing, high", () => {
    const report = auditReport(
      facts({
        fighters: [
          { name: "spar", capabilities: [{ type: "full_access" }] },
          { name: "legacy", capabilities: [], key_problem: 'api_key_env "SPAR_MASTER_KEY": never sent' },
        ],
      }),
    );
    expect(report.ok).toBe(false);
    expect(report.findings).toEqual([
      expect.objectContaining({ id: "provider_keys:legacy", severity: "high" }),
    ]);
    expect(report.findings[0]?.fix).toContain("spar fighter kill legacy");
  });

  it("passes loopback manifest base URLs and flags remote ones, low", () => {
    expect(auditReport(facts({ manifest_base_urls: ["http://127.0.0.1:8080/v1"] })).passed).toContainEqual(
      expect.objectContaining({ check: "manifest_base_urls" }),
    );
    const remote = auditReport(facts({ manifest_base_urls: ["https://llm.example.com/v1"] }));
    expect(remote.ok).toBe(true);
    expect(remote.findings).toEqual([expect.objectContaining({ id: "manifest_base_urls", severity: "low" })]);
  });
});

describe("isLoopbackHost", () => {
  it("knows loopback names and addresses", () => {
    for (const host of [
      "localhost",
      "LOCALHOST",
      "127.0.0.1",
      "127.255.0.3",
      "::1",
      "[::1]",
      "::ffff:127.0.0.1",
      "127.0.0.1:6660",
      "[::1]:6660",
    ]) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "localhost.example", "example.org"]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });
});

describe("humanAccounts", () => {
  const passwd = [
    "root:x:0:0:root:/root:/bin/bash",
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
    "ada:x:1000:1000:Ada:/home/ada:/bin/bash",
    "svc:x:1001:1001::/srv:/usr/sbin/nologin",
    "ci:x:1002:1002::/home/ci:/bin/false",
    "bob:x:1003:1003::/home/bob:/bin/zsh",
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    "",
  ].join("\n");

  it("counts login accounts in the human range and the current user, not root or services", () => {
    expect(humanAccounts(passwd, [], { uid: 1000, name: "ada" })).toEqual(["ada", "bob"]);
    expect(
      humanAccounts("ada:x:1000:1000::/home/ada:/bin/bash\n", [0, 1, 1000], { uid: 1000, name: "ada" }),
    ).toEqual(["ada"]);
  });

  it("counts root when root is the one running the audit", () => {
    expect(humanAccounts("ada:x:1000:1000::/home/ada:/bin/bash\n", [], { uid: 0, name: "root" })).toEqual([
      "ada",
      "root",
    ]);
  });

  it("adds owners of running processes in the human range, even without a login shell", () => {
    expect(humanAccounts(passwd, [1001, 70000, 65534], { uid: 1000, name: "ada" })).toEqual([
      "ada",
      "bob",
      "svc",
    ]);
    expect(humanAccounts("", [1500], { uid: 1000, name: "ada" })).toEqual(["ada", "uid 1500"]);
  });

  it("reads the range from login.defs", () => {
    expect(parseUidRange("# comment\nUID_MIN\t\t\t 500\nUID_MAX  59999\n")).toEqual({ min: 500, max: 59999 });
    expect(parseUidRange("")).toEqual({ min: 1000, max: 60000 });
    expect(humanAccounts(passwd, [], { uid: 1000, name: "ada" }, { min: 1003, max: 2000 })).toEqual([
      "ada",
      "bob",
    ]);
  });
});

describe("gatherAuditInput", () => {
  const homes: string[] = [];
  afterEach(() => {
    for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
  });

  it.skipIf(process.platform === "win32")("reads modes, keys and channels from the data dir", () => {
    const home = mkdtempSync(join(tmpdir(), "spar-audit-"));
    homes.push(home);
    mkdirSync(join(home, "keys", "authorized"), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, "master.key"), "k", { mode: 0o600 });
    writeFileSync(join(home, "keys", "authorized", "cli.pub"), "p", { mode: 0o600 });
    writeFileSync(join(home, ".env"), "OPENAI_API_KEY=sk-secret\n");
    chmodSync(join(home, ".env"), 0o644);
    writeFileSync(
      join(home, "config.toml"),
      'api_listen = "0.0.0.0:7000"\n[channels]\nwebhook_listen = "127.0.0.1:6661"\n' +
        '[channels.telegram]\nallowlist = [42]\n[channels.slack]\ntoken_env = "SLACK"\n',
      { mode: 0o600 },
    );
    // Channel plugins would own these tables; the audit reads them as their owners checked them.
    const owner = (id: string, path: string, properties: object) => ({
      manifest: {
        id,
        version: "0.1.0",
        kernel: "^0.1.0",
        kind: "channel" as const,
        description: id,
        entry: "index.js",
        activation: ["onStartup"],
        sections: { [path]: { type: "object", properties } },
      },
      dir: "/",
      source: "bundled" as const,
    });
    const config = loadConfig(home, {});
    config.sections = checkSections(
      config,
      [
        owner("channel-core", "channels", { webhook_listen: { type: "string" } }),
        owner("channel-telegram", "channels.telegram", { allowlist: { type: "array" } }),
        owner("channel-slack", "channels.slack", { token_env: { type: "string" } }),
      ],
      join(home, "config.toml"),
    );
    const input = gatherAuditInput(home, config, {});
    expect(input).toMatchObject({
      api_listen: "0.0.0.0:7000",
      api_listen_from_env: false,
      allow_unsigned_loopback: true,
      authorized_keys: ["cli"],
      channels: [
        { platform: "telegram", allowlist: [42] },
        { platform: "slack", allowlist: undefined },
      ],
    });
    expect(input.files).toContainEqual({ path: join(home, ".env"), role: "dotenv", mode: 0o644 });
    expect(input.files).toContainEqual({ path: join(home, "master.key"), role: "master_key", mode: 0o600 });
    expect(input.files?.map((f) => f.path)).not.toContain(join(home, "spar.db"));
    expect(input.human_accounts?.length).toBeGreaterThan(0);
    // The one-byte key file: judged by its length, which is all the facts hold of it.
    expect(input.master_secret).toEqual({
      source: join(home, "master.key"),
      strength: { encoding: "raw", bytes: 1, repeated: true },
      database_exists: false,
    });

    const findings = auditSecurity({ ...input, fighters: [] });
    expect(findings.map((f) => f.id).sort()).toEqual(
      expect.arrayContaining(["api_listen", "channel_allowlists:slack", "dotenv", "master_secret"]),
    );
    expect(JSON.stringify(findings)).not.toContain("sk-secret");
  });

  it("flags a skill installed past high-severity findings", () => {
    const findings = auditSecurity(
      facts({
        forced_skills: [
          { name: "sketchy", source: "https://example.com/s.zip", findings: ["pipe-to-shell at SKILL.md:9"] },
        ],
      }),
    );
    expect(findings).toContainEqual(
      expect.objectContaining({
        id: "forced_skills:sketchy",
        severity: "high",
        message: expect.stringContaining("pipe-to-shell at SKILL.md:9"),
      }),
    );
  });
});
