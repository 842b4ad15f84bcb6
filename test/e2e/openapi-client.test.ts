/**
 * A client generated from the daemon's own OpenAPI document, as a user in another project makes one
 * (README "Generating a client"): openapi-typescript's Node API turns the served document into
 * types, a small program drives the API with openapi-fetch, signing each request with a key
 * authorized by `spar key add` (`signedHeaders` from `spar/sign`), and the repo's `tsc --strict`
 * compiles it with no error; a program reading a field the reply does not have must not compile.
 * The compiled program then runs against the real daemon (signed requests only): spawn, message,
 * bouts, a bout's messages, kill.
 */
import { execFile } from "node:child_process";
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import openapiTS, { astToString } from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedHeaders } from "../../lib/sign.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "..", "..");
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

/** The program a user writes against the generated types. */
const PROGRAM = `
import { readFileSync } from "node:fs";
import createClient from "openapi-fetch";
import { signedHeaders } from "spar/sign";
import type { paths } from "./spar-api.js";

const [baseUrl, keyId, keyFile] = process.argv.slice(2) as [string, string, string];
const privateKey = readFileSync(keyFile);

/** Signs each request (RFC 9421) as the daemon wants it: method, URL and the body's digest. */
async function signingFetch(request: Request): Promise<Response> {
  const body = request.body ? await request.text() : undefined;
  const headers = new Headers(request.headers);
  const signed = signedHeaders({ method: request.method, url: request.url, body, keyId, privateKey });
  for (const [name, value] of Object.entries(signed)) if (value) headers.set(name, value);
  return fetch(request.url, { method: request.method, headers, body });
}

// JSON answers only: the message route may also stream (text/event-stream), which this program does not ask for.
const client = createClient<paths, "application/json">({ baseUrl, fetch: signingFetch });

function must<T>(answer: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (answer.data === undefined) {
    throw new Error(what + " failed: " + answer.response.status + " " + JSON.stringify(answer.error));
  }
  return answer.data;
}

const fighter = must(
  await client.POST("/api/v1/fighters", {
    body: { manifest: { name: "typed", description: "a typed client's", system_prompt: "You are typed." } },
  }),
  "spawn",
);
const reply = must(
  await client.POST("/api/v1/fighters/{id}/message", {
    params: { path: { id: fighter.id } },
    body: { message: "hello from a generated client" },
  }),
  "message",
);
const { bouts } = must(
  await client.GET("/api/v1/fighters/{id}/bouts", { params: { path: { id: fighter.id } } }),
  "bouts",
);
const first = bouts[0];
if (!first) throw new Error("no bout");
const { messages } = must(
  await client.GET("/api/v1/bouts/{id}/messages", { params: { path: { id: first.id } } }),
  "messages",
);
const killed = await client.DELETE("/api/v1/fighters/{id}", { params: { path: { id: fighter.id } } });
const tokens: number = reply.usage.input_tokens + reply.usage.output_tokens;
console.log(
  JSON.stringify({
    name: fighter.name,
    status: fighter.status,
    reply: reply.response,
    stop: reply.stop_reason,
    tokens,
    bout: first.id === reply.bout_id,
    origin: first.origin,
    messages: messages.map((m) => m.role + ": " + m.content),
    killed: killed.response.status,
  }),
);
`;

/** The same client, reading a field the reply does not have: the types must refuse it. */
const WRONG = `
import createClient from "openapi-fetch";
import type { paths } from "./spar-api.js";

const client = createClient<paths, "application/json">({ baseUrl: "http://127.0.0.1:1" });
const { data } = await client.POST("/api/v1/fighters/{id}/message", {
  params: { path: { id: "spar" } },
  body: { message: "hi" },
});
const text: string | undefined = data?.reply_text;
const count: string | undefined = data?.iterations;
console.log(text, count);
`;

const tsc = (dir: string, file: string) =>
  run(
    process.execPath,
    [
      TSC,
      "--strict",
      "--noEmitOnError",
      "--target",
      "es2022",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--types",
      "node",
      "--outDir",
      join(dir, "out"),
      join(dir, file),
    ],
    { cwd: dir },
  ).then(
    (done) => ({ code: 0, output: done.stdout + done.stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({
      code: err.code,
      output: err.stdout + err.stderr,
    }),
  );

describe("a client generated from /api/v1/openapi.json", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let project: string;
  const key = generateKeyPairSync("ed25519");

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // Signed requests only: the program gets in by its key or not at all.
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
    const added = await daemon.cli(
      ["key", "add", "typed-client", "-"],
      {},
      key.publicKey.export({ type: "spki", format: "pem" }).toString(),
    );
    expect(added.code, added.stderr).toBe(0);

    // A project of its own, outside the repository, that depends on openapi-fetch and on Spar.
    project = mkdtempSync(join(tmpdir(), "spar-client-"));
    mkdirSync(join(project, "node_modules", "@types"), { recursive: true });
    symlinkSync(join(ROOT, "node_modules", "openapi-fetch"), join(project, "node_modules", "openapi-fetch"));
    symlinkSync(ROOT, join(project, "node_modules", "spar"));
    symlinkSync(
      join(ROOT, "node_modules", "@types", "node"),
      join(project, "node_modules", "@types", "node"),
    );
    writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module", private: true }));
    writeFileSync(
      join(project, "typed.key"),
      (key.privateKey as KeyObject).export({ type: "pkcs8", format: "pem" }).toString(),
    );

    const url = `${daemon.url}/api/v1/openapi.json`;
    const headers = signedHeaders({ method: "GET", url, keyId: "typed-client", privateKey: key.privateKey });
    const res = await fetch(url, { headers: { ...headers } });
    expect(res.status).toBe(200);
    const types = astToString(await openapiTS((await res.json()) as Parameters<typeof openapiTS>[0]));
    writeFileSync(join(project, "spar-api.d.ts"), types);
    writeFileSync(join(project, "client.ts"), PROGRAM);
    writeFileSync(join(project, "wrong.ts"), WRONG);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it("has named types for the records, and a typed operation per route", async () => {
    const types = readFileSync(join(project, "spar-api.d.ts"), "utf8");
    for (const name of [
      "Fighter",
      "FighterManifest",
      "Bout",
      "Message",
      "MessageReply",
      "Troop",
      "Gorilla",
    ]) {
      expect(types, name).toMatch(new RegExp(`\\b${name}: \\{`));
    }
    expect(types).toContain("spawnFighter: {");
    expect(types).toContain("sendMessage: {");
  });

  it("compiles under tsc --strict with no error", async () => {
    const compiled = await tsc(project, "client.ts");
    expect(compiled.output).toBe("");
    expect(compiled.code).toBe(0);
  });

  it("does not compile a program that reads a field the reply does not have, or with the wrong type", async () => {
    const compiled = await tsc(project, "wrong.ts");
    expect(compiled.code).not.toBe(0);
    expect(compiled.output).toMatch(
      /wrong\.ts\(\d+,\d+\): error TS2339: Property 'reply_text' does not exist/,
    );
    expect(compiled.output).toMatch(
      /error TS2322: Type 'number \| undefined' is not assignable to type 'string \| undefined'/,
    );
  });

  it("runs against the daemon, signed: spawn, message, bouts, messages, kill", async () => {
    fake.enqueue({ text: "Hello, typed client." });
    const { stdout } = await run(
      process.execPath,
      [join(project, "out", "client.js"), daemon.url, "typed-client", join(project, "typed.key")],
      { cwd: project },
    );
    expect(JSON.parse(stdout)).toEqual({
      name: "typed",
      status: "idle",
      reply: "Hello, typed client.",
      stop: "end",
      tokens: expect.any(Number),
      bout: true,
      origin: "user",
      messages: ["user: hello from a generated client", "assistant: Hello, typed client."],
      killed: 204,
    });
    expect(JSON.parse(stdout).tokens).toBeGreaterThan(0);
    // Killed: the daemon says so too.
    const gone = await daemon.cli(["fighter", "list", "--json"]);
    expect(gone.code, gone.stderr).toBe(0);
    const names = (JSON.parse(gone.stdout) as { fighters: { name: string }[] }).fighters.map((f) => f.name);
    expect(names).toContain("spar");
    expect(names).not.toContain("typed");
  });
});
