// The size of what the default fighter sends its model for "hello": the system prompt, the whole
// message list and the tool definitions, in characters of the request body. Run after
// `npm run build`:  node bench/prompt-size.mjs
// A minimal chat-completions responder on 127.0.0.1 records the request and answers in SSE.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bodies = [];
const llm = createServer((req, res) => {
  let raw = "";
  req.on("data", (d) => {
    raw += d;
  });
  req.on("end", () => {
    bodies.push(raw);
    const chunk = (delta, finish = null) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(`${chunk({ role: "assistant", content: "Hi." })}${chunk({}, "stop")}data: [DONE]\n\n`);
  });
});
await new Promise((r) => llm.listen(0, "127.0.0.1", r));
const apiPort = await new Promise((r) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => r(port));
  });
});

const home = mkdtempSync(join(tmpdir(), "spar-prompt-"));
writeFileSync(
  join(home, "config.toml"),
  `api_listen = "127.0.0.1:${apiPort}"\n[default_model]\nprovider = "openai_compatible"\nmodel = "m"\nbase_url = "http://127.0.0.1:${llm.address().port}/v1"\n`,
);
const daemon = spawn(process.execPath, [join(import.meta.dirname, "..", "bin", "spar.js"), "start"], {
  env: { ...process.env, SPAR_HOME: home },
  stdio: "ignore",
});
try {
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${apiPort}/api/v1/health`)).ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  await fetch(`http://127.0.0.1:${apiPort}/api/v1/fighters/spar/message`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "hello" }),
  });
  const body = JSON.parse(bodies[0]);
  const system = body.messages.find((m) => m.role === "system")?.content ?? "";
  const messages = JSON.stringify(body.messages).length;
  const tools = JSON.stringify(body.tools ?? []).length;
  console.log(`"hello" to the default fighter: ${bodies.length} model call(s)`);
  console.log(`  system prompt      ${String(system.length).padStart(6)} chars`);
  console.log(
    `  messages (JSON)    ${String(messages).padStart(6)} chars (${body.messages.length} messages)`,
  );
  console.log(`  tools (JSON)       ${String(tools).padStart(6)} chars (${(body.tools ?? []).length} tools)`);
  console.log(`  whole request body ${String(bodies[0].length).padStart(6)} chars`);
} finally {
  daemon.kill("SIGTERM");
  llm.close();
  await new Promise((r) => daemon.once("exit", r));
  rmSync(home, { recursive: true, force: true });
}
