// The size of what the default fighter sends its model for "hello": the system prompt, the whole
// message list and the tool definitions, in characters of the request body, and input tokens
// estimated as Spar estimates them (four characters a token; no tokenizer is installed, and the
// fake model reports no usage). After `npm run build`:
//   node bench/prompt-size.mjs [--bin path/to/bin/spar.js]
import { parseArgs } from "node:util";
import { isMain, post, printRows, row, SPAR_BIN, startDaemon, startMiniLlm } from "./lib.mjs";

/** The parts of one chat-completions request body, in characters, and the token estimate. */
export function requestSize(raw) {
  const body = JSON.parse(raw);
  const text = (c) => (typeof c === "string" ? c : JSON.stringify(c ?? ""));
  const system = body.messages
    .filter((m) => m.role === "system" || m.role === "developer")
    .reduce((n, m) => n + text(m.content).length, 0);
  const messages = JSON.stringify(body.messages).length;
  const tools = JSON.stringify(body.tools ?? []).length;
  return {
    system,
    messages,
    messageCount: body.messages.length,
    tools,
    toolCount: (body.tools ?? []).length,
    body: raw.length,
    tokens: Math.ceil((messages + tools) / 4),
  };
}

export const describeSize = (s) =>
  `≈${s.tokens.toLocaleString("en")} tokens (${(s.messages + s.tools).toLocaleString("en")} chars: system prompt ${s.system.toLocaleString("en")}, ${s.messageCount} messages, ${s.toolCount} tools ${s.tools.toLocaleString("en")})`;

export async function promptSize({ bin = SPAR_BIN } = {}) {
  const llm = await startMiniLlm();
  const daemon = await startDaemon(llm.url, { bin });
  try {
    await post(`${daemon.url}/api/v1/fighters/spar/message`, { message: "hello" });
    const size = requestSize(llm.bodies[0]);
    return [
      row('input tokens of "hello" to the default fighter', describeSize(size), "—", {
        note: `${llm.bodies.length} model call(s); whole first request body ${size.body} chars; tokens estimated as (messages + tools JSON chars) / 4`,
      }),
    ];
  } finally {
    await daemon.stop();
    llm.close();
  }
}

if (isMain(import.meta)) {
  const { values } = parseArgs({ options: { bin: { type: "string" } } });
  printRows(await promptSize({ bin: values.bin ?? SPAR_BIN }));
}
