import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { checkSections } from "../../kernel/host/config-sections.js";
import { nameSlug } from "../../lib/fighter-files.js";
import { isLoopbackHost } from "../../lib/loopback.js";
import type { Capability } from "../../sdk/types.js";
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
    user_home: "/home/ada",
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
    user_plugins: [],
    scheduled_jobs: { gorillas: [], schedules: [] },
    sandbox: { mode: "required", kind: "bubblewrap", ready: true },
    approvals: { mode: "on", after_untrusted: "ask" },
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
      "grant_scopes",
      "shell_patterns",
      "user_plugins",
      "scheduled_jobs",
      "sandbox",
      "approvals",
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

    it("is medium when others can write the last audit's plugin hashes (they could hide a change)", () => {
      expect(auditSecurity(withMode("security-audit.json", "audit_state", 0o644))).toEqual([]);
      expect(auditSecurity(withMode("security-audit.json", "audit_state", 0o662))).toEqual([
        expect.objectContaining({
          id: "file_permissions:security-audit.json",
          severity: "medium",
          message: expect.stringContaining("whoever can write it can hide a changed plugin"),
        }),
      ]);
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
      expect(findings[0]?.message).toContain(
        "fighter coder2 has full_access: every move installed now or later, each inside its own containment",
      );
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
        { check: "grant_scopes", reason: "the daemon is not running" },
        { check: "shell_patterns", reason: "the daemon is not running" },
      ]);
    });
  });

  describe("grant_scopes", () => {
    const one = (capabilities: Capability[], name = "bot") =>
      auditSecurity(facts({ fighters: [{ name, capabilities }] }));

    it("is medium for a file scope outside the fighter's workspace, per grant type", () => {
      const findings = one([
        { type: "file_read", scope: ["~/notes", `${HOME}/workspaces/bot/sub`] },
        { type: "file_write", scope: "/etc" },
      ]);
      expect(findings.map((f) => [f.id, f.severity])).toEqual([
        ["grant_scopes:bot:file_read", "medium"],
        ["grant_scopes:bot:file_write", "medium"],
      ]);
      expect(findings[0]?.message).toBe(
        `fighter bot's file_read grant reaches outside its workspace (${HOME}/workspaces/bot): it may read files under ~/notes`,
      );
      expect(findings[1]?.message).toContain("it may write files under /etc");
    });

    it("passes scopes inside the workspace, no scope, and relative scopes (refused by the moves)", () => {
      const report = auditReport(
        facts({
          fighters: [
            {
              name: "Zoë the 🐉",
              capabilities: [
                { type: "file_write" },
                { type: "file_read", scope: [`${HOME}/workspaces/${nameSlug("Zoë the 🐉")}/x`, "notes"] },
              ],
            },
          ],
        }),
      );
      expect(report.findings).toEqual([]);
      expect(report.passed.map((p) => p.check)).toContain("grant_scopes");
    });

    it("is medium for a network grant with no hosts or hosts *, not for a host list", () => {
      expect(one([{ type: "network" }]).map((f) => f.id)).toEqual(["grant_scopes:bot:network"]);
      expect(one([{ type: "network" }])[0]?.message).toContain("grant has no hosts");
      expect(one([{ type: "web_fetch", hosts: ["docs.python.org", "*"] }])[0]?.message).toContain(
        'hosts "*"',
      );
      expect(one([{ type: "network", hosts: ["*.wikipedia.org"] }])).toEqual([]);
      // full_access is its own check.
      expect(one([{ type: "full_access" }], "spar")).toEqual([]);
    });
  });

  describe("shell_patterns", () => {
    const patterns = (pattern: string | string[]) =>
      auditSecurity(
        facts({ fighters: [{ name: "coder", capabilities: [{ type: "shell_exec", pattern }] }] }),
      );

    it("is medium for * (any command)", () => {
      expect(patterns("*")).toEqual([
        expect.objectContaining({
          id: "shell_patterns:coder",
          severity: "medium",
          message: `fighter coder's shell_exec pattern "*" allows any command: only the shell's sandbox contains what it runs`,
        }),
      ]);
      expect(patterns(["ls -la", " * "]).map((f) => f.id)).toEqual(["shell_patterns:coder"]);
    });

    it("notes, low, patterns starting with a program that runs code", () => {
      const findings = patterns(["bash -c *", "/usr/bin/python3 x.py", "npx *", "make test", "ls", "py* *"]);
      expect(findings.map((f) => [f.id, f.severity])).toEqual([["shell_patterns:coder:runs_code", "low"]]);
      expect(findings[0]?.message).toBe(
        `fighter coder's shell_exec pattern(s) "bash -c *", "/usr/bin/python3 x.py", "npx *", "make test", "py* *" start with a program that runs arbitrary code: the pattern is a convenience, not a boundary; the sandbox is the boundary`,
      );
      for (const safe of ["ls *", "cat *.md", "git-lfs ls-files", "grep -r *"])
        expect(patterns(safe)).toEqual([]);
      for (const code of [
        "sh",
        "env FOO=1 *",
        "xargs *",
        "find . -name *",
        "git status",
        "npm test",
        "node *",
      ]) {
        expect(patterns(code).map((f) => f.id)).toEqual(["shell_patterns:coder:runs_code"]);
      }
    });
  });

  describe("user_plugins", () => {
    const plugin = (last_sha256?: string, sha256: string | null = "b".repeat(64)) => ({
      id: "my-plugin",
      dir: `${HOME}/plugins/my-plugin`,
      entry: `${HOME}/plugins/my-plugin/index.js`,
      ...(sha256 ? { sha256 } : { unreadable: "ENOENT" }),
      ...(last_sha256 ? { last_sha256 } : {}),
    });

    it("is low when new, passes when unchanged, is high when the entry file changed", () => {
      const fresh = auditReport(facts({ user_plugins: [plugin()] }));
      expect(fresh.findings).toEqual([
        expect.objectContaining({ id: "user_plugins:my-plugin", severity: "low" }),
      ]);
      expect(fresh.findings[0]?.message).toContain("is new since the last audit");
      expect(fresh.user_plugins).toEqual([
        {
          id: "my-plugin",
          entry: `${HOME}/plugins/my-plugin/index.js`,
          sha256: "b".repeat(64),
          status: "new",
        },
      ]);

      const same = auditReport(facts({ user_plugins: [plugin("b".repeat(64))] }));
      expect(same.findings).toEqual([]);
      expect(same.user_plugins[0]?.status).toBe("unchanged");

      const changed = auditReport(facts({ user_plugins: [plugin("a".repeat(64))] }));
      expect(changed.ok).toBe(false);
      expect(changed.findings).toEqual([
        expect.objectContaining({ id: "user_plugins:my-plugin", severity: "high" }),
      ]);
      expect(changed.findings[0]?.message).toContain(`sha256 ${"a".repeat(64)} then, ${"b".repeat(64)} now`);
    });

    it("says when an entry file cannot be read, and passes a plugin with no code", () => {
      expect(auditSecurity(facts({ user_plugins: [plugin("a".repeat(64), null)] }))[0]?.message).toContain(
        "cannot be read (ENOENT)",
      );
      const data = auditReport(facts({ user_plugins: [{ id: "skills", dir: `${HOME}/plugins/skills` }] }));
      expect(data.findings).toEqual([]);
      expect(data.user_plugins).toEqual([{ id: "skills", entry: null, sha256: null, status: "no_code" }]);
    });
  });

  describe("scheduled_jobs", () => {
    const gorilla = (state: string) => ({
      name: "digest",
      state,
      schedule: "every 30m",
      timezone: "UTC",
      moves: ["web_fetch", "memory_store"],
      next_run_at: state === "CAGED" ? null : "2030-01-01T00:30:00.000Z",
    });

    it("lists unleashed gorillas and every schedule, low, with what each runs", () => {
      const findings = auditSecurity(
        facts({
          scheduled_jobs: {
            gorillas: [gorilla("UNLEASHED"), { ...gorilla("CAGED"), name: "alpha" }],
            schedules: [
              {
                id: "s1",
                fighter: "tick",
                capabilities: ["schedule", "shell_exec"],
                message: "run the backup",
                cron: "0 7 * * *",
                timezone: "UTC",
                next_run_at: "2030-01-01T07:00:00.000Z",
              },
            ],
          },
        }),
      );
      expect(findings.map((f) => [f.id, f.severity])).toEqual([
        ["scheduled_jobs:gorilla:digest", "low"],
        ["scheduled_jobs:schedule:s1", "low"],
      ]);
      expect(findings[0]?.message).toBe(
        'gorilla digest is unleashed: on "every 30m" (UTC), next at 2030-01-01T00:30:00.000Z, it runs a cycle with the moves web_fetch, memory_store',
      );
      expect(findings[1]?.message).toBe(
        'fighter tick scheduled a message to itself (cron "0 7 * * *" UTC, next at 2030-01-01T07:00:00.000Z): "run the backup", run as a turn with its grants (schedule, shell_exec)',
      );
    });

    it("passes when every gorilla is caged and no fighter has a schedule; skipped without the daemon", () => {
      const report = auditReport(facts({ scheduled_jobs: { gorillas: [gorilla("CAGED")], schedules: [] } }));
      expect(report.passed).toContainEqual({
        check: "scheduled_jobs",
        detail: "nothing runs on a schedule: 1 gorilla(s), all caged; no fighter's schedule",
      });
      const skipped = auditReport(facts({ scheduled_jobs: { unavailable: "the daemon is not running" } }));
      expect(skipped.skipped).toContainEqual({
        check: "scheduled_jobs",
        reason: "the daemon is not running",
      });
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

    const findings = auditSecurity({
      ...input,
      fighters: [],
      scheduled_jobs: { gorillas: [], schedules: [] },
      sandbox: { mode: "required", kind: "bubblewrap", ready: true },
    });
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

describe("security audit: approvals", () => {
  it("passes approvals on, and is MEDIUM when they are off or a tainted turn may act unasked", () => {
    expect(auditReport(facts()).passed).toContainEqual({
      check: "approvals",
      detail:
        "risky calls wait for an answer, and a turn that took in untrusted content asks before acting outside its workspace",
    });
    expect(auditSecurity(facts({ approvals: { mode: "off", after_untrusted: "ask" } }))).toContainEqual(
      expect.objectContaining({
        id: "approvals",
        severity: "medium",
        message: expect.stringContaining('mode = "off"'),
      }),
    );
    expect(auditSecurity(facts({ approvals: { mode: "on", after_untrusted: "off" } }))).toContainEqual(
      expect.objectContaining({
        id: "approvals",
        severity: "medium",
        message: expect.stringContaining('after_untrusted = "off"'),
      }),
    );
  });
});

describe("security audit: the sandbox", () => {
  it("passes a sandbox that runs, and is HIGH when it is off or required and missing", () => {
    expect(auditReport(facts()).passed).toContainEqual({
      check: "sandbox",
      detail: "every process a move starts runs in the sandbox (bubblewrap)",
    });
    const off = auditSecurity(facts({ sandbox: { mode: "off", kind: "none", ready: true } }));
    expect(off).toContainEqual(
      expect.objectContaining({
        id: "sandbox",
        severity: "high",
        message: expect.stringContaining('mode = "off"'),
      }),
    );
    const missing = auditSecurity(
      facts({
        sandbox: {
          mode: "required",
          kind: "none",
          ready: false,
          problem: "bubblewrap (bwrap) is not on the daemon's PATH",
        },
      }),
    );
    expect(missing).toContainEqual(
      expect.objectContaining({
        id: "sandbox",
        severity: "high",
        message: expect.stringContaining("bubblewrap"),
      }),
    );
  });
});
