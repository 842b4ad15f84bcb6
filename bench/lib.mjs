// Shared by the benchmarks: a minimal chat-completions responder on 127.0.0.1 that records each
// request body and answers in SSE, and the built daemon started in a temporary data dir.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The CLI of this checkout; a benchmark may take another (an older build) to compare in one run. */
export const SPAR_BIN = join(import.meta.dirname, "..", "bin", "spar.js");

export function freePort() {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

export async function startMiniLlm(answer = "Hi.") {
  const bodies = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => {
      raw += d;
    });
    req.on("end", () => {
      bodies.push(raw);
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`${chunk({ role: "assistant", content: answer })}${chunk({}, "stop")}data: [DONE]\n\n`);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, bodies, close: () => server.close() };
}

/**
 * Starts `spar start` with a config whose default model is `llmUrl`; resolves once it is healthy.
 * `prepare(home)` runs after `spar init`, before the start (e.g. to authorize a key).
 */
export async function startDaemon(llmUrl, extraToml = "", prepare = undefined, bin = SPAR_BIN) {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), "spar-bench-"));
  writeFileSync(
    join(home, "config.toml"),
    `api_listen = "127.0.0.1:${port}"\n[default_model]\nprovider = "openai_compatible"\nmodel = "m"\nbase_url = "${llmUrl}"\n${extraToml}`,
  );
  if (prepare) {
    execFileSync(process.execPath, [bin, "init"], {
      env: { ...process.env, SPAR_HOME: home },
    });
    prepare(home);
  }
  const child = spawn(process.execPath, [bin, "start"], {
    env: { ...process.env, SPAR_HOME: home },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/api/v1/health`)).ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    home,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      rmSync(home, { recursive: true, force: true });
    },
  };
}
