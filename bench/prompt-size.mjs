// The size of what the default fighter sends its model for "hello": the system prompt, the whole
// message list and the tool definitions, in characters of the request body. After `npm run build`:
//   node bench/prompt-size.mjs
import { startDaemon, startMiniLlm } from "./lib.mjs";

const llm = await startMiniLlm();
const daemon = await startDaemon(llm.url);
try {
  await fetch(`${daemon.url}/api/v1/fighters/spar/message`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "hello" }),
  });
  const body = JSON.parse(llm.bodies[0]);
  const system = body.messages.find((m) => m.role === "system")?.content ?? "";
  console.log(`"hello" to the default fighter: ${llm.bodies.length} model call(s)`);
  console.log(`  system prompt      ${String(system.length).padStart(6)} chars`);
  console.log(
    `  messages (JSON)    ${String(JSON.stringify(body.messages).length).padStart(6)} chars (${body.messages.length} messages)`,
  );
  console.log(
    `  tools (JSON)       ${String(JSON.stringify(body.tools ?? []).length).padStart(6)} chars (${(body.tools ?? []).length} tools)`,
  );
  console.log(`  whole request body ${String(llm.bodies[0].length).padStart(6)} chars`);
} finally {
  await daemon.stop();
  llm.close();
}
