// 7. What "hello" costs in input: the first request the default fighter sends its model (system
// prompt, messages, tool definitions), as the fake model receives it, beside the same "hello" to a
// minimal fighter ("Be brief.", no tools) in the same daemon. Tokens are estimated as characters
// ÷ 4 (no tokenizer is installed), the same rule for both sides and for OpenClaw's part.
import { withSpar } from "../suite/daemon.mjs";
import { startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { message, spawnFighters } from "../suite/spar-api.mjs";
import { sleep } from "../suite/stats.mjs";

export const tokens = (chars) => Math.ceil(chars / 4);

/** The parts of one chat-completions request body, in characters. */
export function anatomy(raw) {
  const body = JSON.parse(raw);
  const messages = body.messages ?? [];
  const system = messages
    .filter((m) => m.role === "system" || m.role === "developer")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
    .join("\n");
  const tools = body.tools ?? [];
  return {
    total: raw.length,
    system: system.length,
    messages: messages.length,
    messagesChars: JSON.stringify(messages).length,
    tools: tools.length,
    toolsChars: JSON.stringify(tools).length,
  };
}

export const describe = (a) =>
  `request body ${a.total} chars ≈ ${tokens(a.total)} tokens: system prompt ${a.system} chars, ${a.messages} messages ${a.messagesChars} chars (JSON), ${a.tools} tools ${a.toolsChars} chars (JSON)`;

/** Sends "hello" and returns the model calls it caused (their bodies). */
async function hello(llm, api, fighter) {
  const before = llm.state.requests;
  const firstBody = llm.state.bodies.length;
  await message(api, fighter, "hello");
  await sleep(500); // work after the reply (reflection, compaction) would call the model now
  return { calls: llm.state.requests - before, bodies: llm.state.bodies.slice(firstBody) };
}

export async function prompt() {
  const llm = await startFakeModel({ keep: 20 });
  try {
    return await withSpar(llm.url, {}, async (daemon) => {
      const spar = await hello(llm, daemon.api, "spar");
      await spawnFighters(daemon.api, "min-", 1);
      const minimal = await hello(llm, daemon.api, "min-0");
      const a = anatomy(spar.bodies[0]);
      const b = anatomy(minimal.bodies[0]);
      return {
        title: '7. Input tokens of "hello"',
        notes: [
          `"hello" to the default fighter "spar" (default config, default model pointed at the fake server): ${spar.calls} model call(s); first: ${describe(a)}`,
          `"hello" to a minimal fighter in the same daemon: ${minimal.calls} model call(s); first: ${describe(b)}`,
          "tokens ≈ characters of the whole request body ÷ 4 (JSON syntax included; no tokenizer)",
        ],
        figures: [
          figure({
            label: '"hello" to the default fighter, input',
            measured: `≈ ${tokens(a.total)} tokens (${a.total} chars; ${a.tools} tools, system prompt ${a.system} chars)`,
            baseline: `minimal fighter ≈ ${tokens(b.total)} tokens (${b.total} chars)`,
            ratio: a.total / b.total,
          }),
        ],
      };
    });
  } finally {
    await llm.close();
  }
}
