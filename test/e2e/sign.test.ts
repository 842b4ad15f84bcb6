import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  SPAR_BIN,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const ROOT = resolve(import.meta.dirname, "..", "..");

/** The README's example for curl users, word for word (the daemon's address aside). */
const CURL_EXAMPLE = `openssl genpkey -algorithm ed25519 -out laptop.key
openssl pkey -in laptop.key -pubout | spar key add laptop -

body='{"message":"hello"}'
spar sign POST /api/v1/fighters/spar/message "$body" --key laptop.key --key-id laptop > headers.txt
curl -sS http://127.0.0.1:6660/api/v1/fighters/spar/message \\
  -H 'content-type: application/json' -H @headers.txt --data "$body"
`;

/** The README's example for Node, word for word (the daemon's address aside). */
const NODE_EXAMPLE = `import { readFileSync } from "node:fs";
import { signedHeaders } from "spar/sign";

const url = "http://127.0.0.1:6660/api/v1/fighters/spar/message";
const body = JSON.stringify({ message: "hello" });
const headers = signedHeaders({
  method: "POST",
  url,
  body,
  keyId: "laptop",
  privateKey: readFileSync("laptop.key"),
});
const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body,
});
console.log(response.status, await response.json());
`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A signed request is what lets these in: the daemon accepts no unsigned ones, not even from here. */
describe("signing requests for other clients: spar sign and spar/sign", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  /** A project folder, as a user's would be: `spar` on the PATH, the package in node_modules. */
  let work: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
    work = mkdtempSync(join(tmpdir(), "spar-sign-"));
    mkdirSync(join(work, "bin"));
    writeFileSync(join(work, "bin", "spar"), `#!/bin/sh\nexec "${process.execPath}" "${SPAR_BIN}" "$@"\n`);
    chmodSync(join(work, "bin", "spar"), 0o755);
    mkdirSync(join(work, "node_modules"));
    symlinkSync(ROOT, join(work, "node_modules", "spar"), "dir");
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    removeHome(work);
  });

  const atPort = (text: string) => text.replaceAll("127.0.0.1:6660", `127.0.0.1:${port}`);
  const run = (file: string, args: string[]) =>
    new Promise<Run>((done) => {
      execFile(
        file,
        args,
        {
          cwd: work,
          env: { PATH: `${join(work, "bin")}:${process.env.PATH}`, SPAR_HOME: home },
          timeout: 60_000,
        },
        (err, stdout, stderr) => done({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
      );
    });

  it("runs the README's curl example: a key of its own, spar sign, curl", async () => {
    const result = await run("sh", ["-ec", atPort(CURL_EXAMPLE)]);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^Authorized laptop \(SHA256:/);
    const reply = JSON.parse(result.stdout.slice(result.stdout.indexOf("{"))) as { response: string };
    expect(reply.response).toBe("echo: hello");

    const headers = readFileSync(join(work, "headers.txt"), "utf8");
    expect(headers).toMatch(
      /^Signature-Input: sig1=\("@method" "@target-uri" "content-digest"\);created=\d+;keyid="laptop";nonce="[^"]+";alg="ed25519"\nSignature: sig1=:[A-Za-z0-9+/=]+:\nContent-Digest: sha-256=:[A-Za-z0-9+/=]+:\n$/,
    );
    // The same headers again are a replay, and no headers at all are refused here.
    const url = `http://127.0.0.1:${port}/api/v1/fighters/spar/message`;
    const body = '{"message":"hello"}';
    const curl = (...extra: string[]) =>
      run("curl", ["-sS", url, "-H", "content-type: application/json", ...extra, "--data", body]);
    expect(JSON.parse((await curl("-H", "@headers.txt")).stdout).error.message).toMatch(
      /nonce was already used/,
    );
    expect(JSON.parse((await curl()).stdout).error.message).toMatch(/accepts signed requests only/);
  });

  it("runs the README's Node example, importing spar/sign", async () => {
    writeFileSync(join(work, "example.mjs"), atPort(NODE_EXAMPLE));
    const result = await run(process.execPath, ["example.mjs"]);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^200 \{/);
    expect(result.stdout).toContain("response: 'echo: hello'");
  });

  it("signs with the CLI's own key by default, a request without a body, and prints JSON", async () => {
    const signed = await run("spar", ["sign", "get", "/api/v1/fighters", "--json"]);
    const { method, url, headers } = JSON.parse(signed.stdout) as {
      method: string;
      url: string;
      headers: Record<string, string>;
    };
    expect(method).toBe("GET");
    expect(url).toBe(`http://127.0.0.1:${port}/api/v1/fighters`);
    expect(Object.keys(headers).sort()).toEqual(["signature", "signature-input"]);
    expect(headers["signature-input"]).toContain('keyid="cli"');
    const listed = await run("curl", [
      "-sS",
      url,
      ...Object.entries(headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
    ]);
    expect(JSON.parse(listed.stdout).fighters.map((f: { name: string }) => f.name)).toContain("spar");

    const noId = await run("spar", ["sign", "GET", "/api/v1/fighters", "--key", "laptop.key"]);
    expect(noId.stderr).toBe(
      "spar: --key needs --key-id <name>: the name its public key was authorized under (spar key list) (VALIDATION_FAILED)\n",
    );
  });

  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  it.skipIf(!readme.includes("spar sign"))("is the README's text, word for word", () => {
    expect(readme).toContain(CURL_EXAMPLE);
    expect(readme).toContain(NODE_EXAMPLE);
  });
});
