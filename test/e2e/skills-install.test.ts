import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { makeTar, makeZip } from "../helpers/archives.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const EXAMPLE = resolve(import.meta.dirname, "..", "..", "examples", "skills", "changelog-entry");
const MALICIOUS = resolve(import.meta.dirname, "..", "fixtures", "skills", "malicious");

/** The installed set as a user would compare it: the lock file's bytes and the folders beside it. */
function installedState(home: string): string {
  const dir = join(home, "skills");
  if (!existsSync(dir)) return "(none)";
  const lock = existsSync(join(dir, "skills.lock.json"))
    ? readFileSync(join(dir, "skills.lock.json"), "utf8")
    : "";
  return `${lock}|${readdirSync(dir).sort().join(",")}`;
}

/**
 * Installing, scanning and removing skills as a user does: the real CLI and API against the real
 * daemon, from a folder, from URLs served on 127.0.0.1 (a SKILL.md, a .tar.gz, a .zip), with the
 * installed skill then used in a turn; and every bad input refused with its code, leaving the
 * installed set exactly as it was.
 */
describe("installing skills", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let site: Server;
  let siteUrl: string;
  const served = new Map<
    string,
    { type: string; body: Buffer | string; status?: number; location?: string }
  >();

  const exampleMd = readFileSync(join(EXAMPLE, "SKILL.md"), "utf8");
  const renamed = (name: string) => exampleMd.replace("name: changelog-entry", `name: ${name}`);

  beforeAll(async () => {
    site = createServer((req, res) => {
      const page = served.get(req.url ?? "");
      if (!page) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(page.status ?? 200, {
        "content-type": page.type,
        ...(page.location ? { location: page.location } : {}),
      });
      res.end(page.body);
    });
    await new Promise<void>((done) => site.listen(0, "127.0.0.1", done));
    const sitePort = (site.address() as AddressInfo).port;
    siteUrl = `http://127.0.0.1:${sitePort}`;
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n[moves.skills]\nallow_private = ["127.0.0.1:${sitePort}"]\n`,
    );
    daemon = await startDaemon(home, port);
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    site?.close();
    removeHome(home);
  });

  it("installs the example skill from a folder, lists it, uses it in a turn, and removes it", async () => {
    const installed = await daemon.cli(["move", "install", EXAMPLE]);
    expect(installed.stderr).toBe("");
    expect(installed.stdout).toBe(`installed changelog-entry 1.0.0 from local:${EXAMPLE}\n`);
    const lock = JSON.parse(readFileSync(join(home, "skills", "skills.lock.json"), "utf8"));
    expect(lock.skills["changelog-entry"]).toMatchObject({
      version: "1.0.0",
      forced: false,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const listed = JSON.parse((await daemon.cli(["move", "list", "--json"])).stdout) as {
      skills: { name: string; source: string }[];
    };
    expect(listed.skills.find((s) => s.name === "changelog-entry")).toMatchObject({ source: "installed" });

    // Used at once, no restart: named beside a matching message, loaded, its moves offered.
    writeFileSync(join(home, "placeholder"), "");
    fake.enqueue(
      { tool_calls: [{ name: "skill_load", arguments: { name: "changelog-entry" } }] },
      { text: "recorded" },
    );
    const reply = await daemon.request<{ response: string }>("POST", "/api/v1/fighters/spar/message", {
      message: "add a changelog entry for the new scan command",
      bout: "new",
    });
    expect(reply.body.response).toBe("recorded");
    expect(fake.calls()[0]?.context).toMatch(
      /## Skills for this message[\s\S]*- changelog-entry: Add an entry/,
    );
    expect(JSON.parse(fake.calls()[1]?.tool_results.at(-1) ?? "{}").instructions).toMatch(
      /^# Add a changelog entry/,
    );
    expect(fake.requests[1]?.body?.tools?.map((t) => t.function.name)).toContain("file_edit");

    const removed = await daemon.cli(["move", "remove", "changelog-entry"]);
    expect(removed.stdout).toBe("removed changelog-entry\n");
    expect(existsSync(join(home, "skills", "changelog-entry"))).toBe(false);
    expect(JSON.parse(readFileSync(join(home, "skills", "skills.lock.json"), "utf8")).skills).toEqual({});
  });

  it("installs from a URL: a SKILL.md, a .tar.gz and a .zip on 127.0.0.1", async () => {
    served.set("/one/SKILL.md", { type: "text/markdown", body: renamed("changelog-md") });
    served.set("/two.tar.gz", {
      type: "application/gzip",
      body: gzipSync(makeTar([{ name: "SKILL.md", body: renamed("changelog-tar") }])),
    });
    served.set("/three.zip", {
      type: "application/zip",
      body: makeZip([
        { name: "changelog-zip/SKILL.md", data: renamed("changelog-zip") },
        { name: "changelog-zip/notes.md", data: "# notes\n" },
      ]),
    });
    for (const [path, name] of [
      ["/one/SKILL.md", "changelog-md"],
      ["/two.tar.gz", "changelog-tar"],
      ["/three.zip", "changelog-zip"],
    ] as const) {
      const result = await daemon.cli(["move", "install", `${siteUrl}${path}`, "--json"]);
      expect(result.code, result.stdout).toBe(0);
      expect(JSON.parse(result.stdout).skill).toMatchObject({ name, source: `${siteUrl}${path}` });
    }
    expect(existsSync(join(home, "skills", "changelog-zip", "notes.md"))).toBe(true);
    const search = await daemon.request<{ results: { name: string }[] }>(
      "GET",
      "/api/v1/moves/search?q=changelog%20entry",
    );
    expect(search.body.results.map((r) => r.name)).toEqual(
      expect.arrayContaining(["changelog-md", "changelog-tar", "changelog-zip"]),
    );
  });

  it("scans: findings with rule, severity, file and line, and exit 1 on high", async () => {
    const clean = await daemon.cli(["move", "scan", EXAMPLE]);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/no findings/);
    const sample = join(
      MALICIOUS,
      readdirSync(MALICIOUS).find((d) => d.startsWith("pipe-to-shell")) as string,
    );
    const bad = await daemon.cli(["move", "scan", sample]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^HIGH +pipe-to-shell +SKILL\.md:\d+ /m);
    const json = JSON.parse((await daemon.cli(["move", "scan", sample, "--json"])).stdout);
    expect(json.findings[0]).toMatchObject({
      rule: expect.any(String),
      severity: expect.any(String),
      file: "SKILL.md",
      line: expect.any(Number),
    });
  });

  it("refuses a malicious skill unless forced, and the audit reports a forced one", async () => {
    const fixture = join(
      MALICIOUS,
      readdirSync(MALICIOUS).find((d) => d.startsWith("prompt-injection")) as string,
    );
    // The corpus's folders are named by what they attack; an installed skill's folder is its name.
    const skillName = /^name: (\S+)$/m.exec(readFileSync(join(fixture, "SKILL.md"), "utf8"))?.[1] as string;
    const sample = join(home, "..", `malicious-${process.pid}`, skillName);
    cpSync(fixture, sample, { recursive: true });
    const before = installedState(home);
    const refused = await daemon.cli(["move", "install", sample]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/high-severity finding.*\(FORBIDDEN\)/);
    expect(refused.stdout).toMatch(/prompt-injection/);
    expect(installedState(home)).toBe(before);

    const forced = await daemon.cli(["move", "install", sample, "--force", "--json"]);
    expect(forced.code, forced.stdout).toBe(0);
    const name = JSON.parse(forced.stdout).skill.name as string;
    expect(
      JSON.parse(readFileSync(join(home, "skills", "skills.lock.json"), "utf8")).skills[name].forced,
    ).toBe(true);
    const audit = await daemon.cli(["security", "audit", "--json"]);
    expect(audit.code).toBe(1);
    expect(JSON.parse(audit.stdout).findings.map((f: { id: string }) => f.id)).toContain(
      `forced_skills:${name}`,
    );
    await daemon.cli(["move", "remove", name]);
    execFileSync("rm", ["-rf", join(sample, "..")]);
  });

  it("refuses bad input with a stable code, leaving the installed set exactly as it was", async () => {
    const base = join(home, "..", `bad-skills-${process.pid}`);
    const folder = (name: string, files: Record<string, string>) => {
      const dir = join(base, name);
      mkdirSync(dir, { recursive: true });
      for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
      return dir;
    };
    served.set("/escape.tar.gz", {
      type: "application/gzip",
      body: gzipSync(
        makeTar([
          { name: "SKILL.md", body: renamed("escape") },
          { name: "../outside.md", body: "x" },
        ]),
      ),
    });
    served.set("/link.tar.gz", {
      type: "application/gzip",
      body: gzipSync(
        makeTar([
          { name: "SKILL.md", body: renamed("linked") },
          { name: "x", type: "2", linkname: "/etc/passwd" },
        ]),
      ),
    });
    served.set("/bomb.zip", {
      type: "application/zip",
      body: makeZip([
        { name: "SKILL.md", data: renamed("bomb") },
        { name: "big.md", data: Buffer.alloc(5_000_000, 97) },
      ]),
    });
    served.set("/redirect", {
      type: "text/plain",
      body: "",
      status: 302,
      location: "http://127.0.0.2:9/SKILL.md",
    });
    const cases: [string, string, RegExp][] = [
      [
        folder("not-yaml", { "SKILL.md": "---\nname: [broken\n---\n# x\n" }),
        "VALIDATION_FAILED",
        /not valid YAML/,
      ],
      [
        folder("long-description", {
          "SKILL.md": renamed("long-description").replace(
            /^description: .*$/m,
            `description: ${"d".repeat(1025)}`,
          ),
        }),
        "VALIDATION_FAILED",
        /"description" must be at most 1024 characters/,
      ],
      [
        folder("review-pull-request", { "SKILL.md": renamed("review-pull-request") }),
        "CONFLICT",
        /review-pull-request/,
      ],
      [`${siteUrl}/escape.tar.gz`, "FORBIDDEN", /\.\./],
      [`${siteUrl}/link.tar.gz`, "FORBIDDEN", /link/],
      [`${siteUrl}/bomb.zip`, "PAYLOAD_TOO_LARGE", /./],
      [`${siteUrl}/redirect`, "FORBIDDEN", /127\.0\.0\.2/],
      [`${siteUrl}/missing.zip`, "NOT_FOUND", /./],
    ];
    const before = installedState(home);
    for (const [source, code, message] of cases) {
      const result = await daemon.cli(["move", "install", source, "--json"]);
      expect(result.code, source).toBe(1);
      const error = JSON.parse(result.stdout).error;
      expect(error.code, `${source}: ${error.message}`).toBe(code);
      expect(error.message, source).toMatch(message);
      expect(installedState(home), source).toBe(before);
    }
    // A name already installed needs --replace.
    await daemon.cli(["move", "install", folder("twice", { "SKILL.md": renamed("twice") })]);
    const again = await daemon.cli(["move", "install", join(base, "twice"), "--json"]);
    expect(JSON.parse(again.stdout).error.code).toBe("CONFLICT");
    expect((await daemon.cli(["move", "install", join(base, "twice"), "--replace"])).code).toBe(0);
    execFileSync("rm", ["-rf", base]);
  });

  it("installs a local .tar.gz and a file:// URL, records where from, and says plainly what is wrong", async () => {
    const base = join(home, "..", `local-skills-${process.pid}`);
    mkdirSync(join(base, "changelog-folder"), { recursive: true });
    try {
      const archive = join(base, "changelog-local.tar.gz");
      writeFileSync(archive, gzipSync(makeTar([{ name: "SKILL.md", body: renamed("changelog-local") }])));
      const fromArchive = await daemon.cli(["move", "install", archive, "--json"]);
      expect(fromArchive.stderr).toBe("");
      expect(JSON.parse(fromArchive.stdout).skill).toMatchObject({
        name: "changelog-local",
        source: `local:${archive}`,
      });
      writeFileSync(join(base, "changelog-folder", "SKILL.md"), renamed("changelog-folder"));
      const fromUrl = await daemon.cli([
        "move",
        "install",
        pathToFileURL(join(base, "changelog-folder")).href,
      ]);
      expect(fromUrl.stderr).toBe("");
      expect(fromUrl.stdout).toBe(
        `installed changelog-folder 1.0.0 from local:${join(base, "changelog-folder")}\n`,
      );
      const lock = JSON.parse(readFileSync(join(home, "skills", "skills.lock.json"), "utf8"));
      expect(lock.skills["changelog-folder"].source).toBe(`local:${join(base, "changelog-folder")}`);

      // A folder whose SKILL.md names another skill is refused, naming both.
      const before = installedState(home);
      mkdirSync(join(base, "my-notes"));
      writeFileSync(join(base, "my-notes", "SKILL.md"), renamed("other-name"));
      const mismatch = await daemon.cli(["move", "install", join(base, "my-notes")]);
      expect(mismatch.code).toBe(1);
      expect(mismatch.stderr).toBe(
        'spar: the folder is named "my-notes" but its SKILL.md names the skill "other-name": the Agent Skills standard wants them equal; rename the folder or the name, then install again (VALIDATION_FAILED)\n',
      );
      expect(installedState(home)).toBe(before);

      // The CONFLICT says how to replace; a YAML error is shown whole, with its line in the file.
      const again = await daemon.cli(["move", "install", join(base, "changelog-folder")]);
      expect(again.stderr).toContain("install with --replace");
      mkdirSync(join(base, "bad-yaml"));
      writeFileSync(
        join(base, "bad-yaml", "SKILL.md"),
        "---\nname: bad-yaml\ndescription: one: two\n---\n# x\n",
      );
      const yaml = await daemon.cli(["move", "install", join(base, "bad-yaml")]);
      expect(yaml.stderr).toBe(
        "spar: SKILL.md: front matter is not valid YAML at line 3, column 14: Nested mappings are not allowed in compact mappings (in: description: one: two) (VALIDATION_FAILED)\n",
      );
    } finally {
      await daemon.cli(["move", "remove", "changelog-local"]);
      await daemon.cli(["move", "remove", "changelog-folder"]);
      execFileSync("rm", ["-rf", base]);
    }
  });

  it("disables a bundled skill with remove, and enables it again with install", async () => {
    expect((await daemon.cli(["move", "remove", "write-apology"])).stdout).toMatch(/disabled/);
    const off = await daemon.request<{ skills: { name: string }[] }>("GET", "/api/v1/moves");
    expect(off.body.skills.map((s) => s.name)).not.toContain("write-apology");
    expect((await daemon.cli(["move", "install", "write-apology"])).stdout).toMatch(/enabled again/);
    const on = await daemon.request<{ skills: { name: string }[] }>("GET", "/api/v1/moves");
    expect(on.body.skills.map((s) => s.name)).toContain("write-apology");
    const unknown = await daemon.cli(["move", "remove", "no-such-skill", "--json"]);
    expect(JSON.parse(unknown.stdout).error.code).toBe("NOT_FOUND");

    // Every change was published: the event stream's history replays them.
    const socket = new WebSocket(`ws://127.0.0.1:${daemon.port}/api/v1/ws`);
    const events: { kind: string; name: string; source: string }[] = [];
    await new Promise<void>((done, fail) => {
      socket.once("error", fail);
      socket.on("message", (data) => {
        const frame = JSON.parse(String(data));
        if (frame.type === "event") events.push(frame);
        if (frame.kind === "move.installed" && frame.name === "write-apology") done();
      });
      socket.once("open", () =>
        socket.send(
          JSON.stringify({ type: "subscribe", kinds: ["move.installed", "move.removed"], since: 0 }),
        ),
      );
    });
    socket.close();
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "move.installed", name: "changelog-entry" }),
        expect.objectContaining({ kind: "move.removed", name: "write-apology", source: "bundled" }),
        expect.objectContaining({ kind: "move.installed", name: "write-apology", source: "bundled" }),
      ]),
    );
  });
});
