import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CLI_KEY_ID, loadCliKey } from "../../lib/keys.js";
import { signedHeaders } from "../../lib/sign.js";
import { conformance, type OpenApiLike } from "./openapi-check.js";

export const SPAR_BIN = resolve(import.meta.dirname, "..", "..", "bin", "spar.js");

/** A port that was free a moment ago (the daemon gets it by config; a test never guesses). */
export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

export function tempHome(): string {
  return mkdtempSync(join(tmpdir(), "spar-e2e-"));
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI binary (`node bin/spar.js …`) against a data dir. `input`, when given, is written
 * to its standard input, which is then closed (a pipe, as in `cat file | spar chat -`).
 */
export function runCli(
  home: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string,
): Promise<CliResult> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      [SPAR_BIN, ...args],
      { env: { ...cleanEnv(), SPAR_HOME: home, ...env }, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** The test process's environment without variables that would change what the daemon does. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(SPAR_|OPENAI_|ANTHROPIC_|GEMINI_|GOOGLE_|OPENROUTER_)/.test(name) || name === "NODE_OPTIONS")
      delete env[name];
  }
  return env;
}

export interface TestDaemon {
  home: string;
  url: string;
  port: number;
  process: ChildProcess;
  output(): string;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** The real CLI with the daemon's environment (its keys), plus `extra`; `input` goes to its stdin. */
  cli(args: string[], extra?: NodeJS.ProcessEnv, input?: string): Promise<CliResult>;
  /** fetch against the daemon with a JSON body; returns status and parsed body. */
  request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T; headers: Headers }>;
}

/**
 * `[[approvals.rules]]` letting every fighter run `moves` unasked, for a suite that tests those moves
 * rather than approvals (shell_exec, fighter_spawn, schedule_add … ask by default): what a user writes
 * in config.toml to the same end. `fighter` narrows it to one fighter.
 *
 * @example
 * writeConfig(home, port, fake.url, allowUnasked(["shell_exec"]));
 */
export function allowUnasked(moves: string[], fighter = "*"): string {
  return moves
    .map((move) => `\n[[approvals.rules]]\nfighter = "${fighter}"\nmove = "${move}"\naction = "allow"\n`)
    .join("");
}

/** Writes a config.toml whose default model is the fake OpenAI server at `llmUrl`. */
export function writeConfig(home: string, port: number, llmUrl: string, extra = ""): void {
  writeFileSync(
    join(home, "config.toml"),
    `api_listen = "127.0.0.1:${port}"\n\n[default_model]\nprovider = "openai"\nmodel = "fake-model"\n` +
      `base_url = "${llmUrl}"\napi_key_env = "OPENAI_API_KEY"\n${extra}`,
  );
}

/**
 * Starts the real built daemon (`spar start`) as a child process and waits until it reports that it
 * listens. `home` must already hold a config.toml (see writeConfig); init runs for the rest.
 */
export async function startDaemon(
  home: string,
  port: number,
  env: NodeJS.ProcessEnv = {},
): Promise<TestDaemon> {
  const fullEnv = { ...cleanEnv(), SPAR_HOME: home, OPENAI_API_KEY: "sk-test-secret-0000", ...env };
  const child = spawn(process.execPath, [SPAR_BIN, "start"], {
    env: fullEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`daemon did not start in 30 s:\n${output}`)), 30_000);
    const check = () => {
      if (output.includes("listening on")) {
        clearTimeout(timer);
        done();
      }
    };
    child.stdout?.on("data", check);
    exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`daemon exited with ${code} before listening:\n${output}`));
    });
  });
  let stopping = false;
  // A daemon that crashes mid-suite leaves its tests with "fetch failed" and nothing else: say why
  // it ended (a stop or a test's own kill ends it with a signal or 0, and says nothing).
  void exited.then((code) => {
    if (code !== null && code !== 0 && !stopping) {
      console.error(
        `daemon on port ${port} (${home}) exited with ${code} mid-suite:\n${output.slice(-4000)}`,
      );
    }
  });
  const url = `http://127.0.0.1:${port}`;
  homes.set(url, home);
  return {
    home,
    url,
    port,
    process: child,
    output: () => output,
    async stop() {
      stopping = true;
      forgetDocument(url);
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
    cli: (args, extra = {}, input) =>
      runCli(home, args, { ...env, OPENAI_API_KEY: fullEnv.OPENAI_API_KEY, ...extra }, input),
    async request(method, path, body) {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await response.text();
      const parsed = text ? JSON.parse(text) : undefined;
      // Every answer a suite receives matches what the daemon's own document says of it.
      const checker = await documentOf(url);
      const mismatch = checker?.check(
        method,
        path,
        response.status,
        response.headers.get("content-type"),
        parsed,
      );
      if (mismatch) throw new Error(`the answer does not match the OpenAPI document: ${mismatch}`);
      // A body that lacks what its response schema requires fails to serialise (fast-json-stringify
      // throws "<key>" is required!): a 500 the document covers, but a wrong schema all the same.
      const unserialised = response.status === 500 && /error="\\"[^"\\]+\\" is required!"/.exec(output);
      if (unserialised) {
        throw new Error(`${method} ${path}: the answer failed its response schema: ${unserialised[0]}`);
      }
      return { status: response.status, body: parsed as never, headers: response.headers };
    },
  };
}

const documents = new Map<string, Promise<ReturnType<typeof conformance> | undefined>>();

/**
 * The conformance checker for the daemon at `url`: its OpenAPI document, fetched once (undefined
 * when the daemon does not serve it unsigned: a suite that turns `allow_unsigned_loopback` off).
 * Each daemon of a suite has its own port, so the URL names it.
 *
 * @example
 * const mismatch = (await documentOf(d.url))?.check("GET", "/api/v1/fighters", 200, "application/json", body);
 */
export function documentOf(url: string): Promise<ReturnType<typeof conformance> | undefined> {
  let known = documents.get(url);
  if (!known) {
    known = fetchDocument(url)
      .then((doc) => (doc ? conformance(doc) : undefined))
      .catch(() => undefined);
    documents.set(url, known);
  }
  return known;
}

/**
 * The document, unsigned; from a daemon that refuses unsigned requests, signed with its data dir's
 * CLI key (every daemon startDaemon starts has one), so those suites' answers are checked too.
 */
async function fetchDocument(url: string): Promise<OpenApiLike | undefined> {
  const target = `${url}/api/v1/openapi.json`;
  let response = await fetch(target);
  const home = homes.get(url);
  const privateKey = response.status === 401 && home ? loadCliKey(home) : undefined;
  if (privateKey) {
    response = await fetch(target, {
      headers: { ...signedHeaders({ method: "GET", url: target, keyId: CLI_KEY_ID, privateKey }) },
    });
  }
  return response.ok ? ((await response.json()) as OpenApiLike) : undefined;
}

/** The data dir of each running daemon startDaemon started, by its URL. */
const homes = new Map<string, string>();

/** Forgets the document of a daemon that stopped: another may take its port. */
function forgetDocument(url: string): void {
  documents.delete(url);
  homes.delete(url);
}

export function removeHome(home: string): void {
  rmSync(home, { recursive: true, force: true });
}
