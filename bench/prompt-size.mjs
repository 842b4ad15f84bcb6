// What a prompt costs with everything installed: every bundled tool pack and all bundled skills.
//
// 1. "hello" to the default fighter `spar` (full access): the first request's input tokens, counted
//    with a real tokenizer (o200k, gpt-tokenizer): system prompt, messages, tool definitions.
//    Goal ≤ 1,000 (OpenClaw, measured by the issue: 14,160).
// 2. Tasks that need a skill and a deferred tool, and a deferred tool alone: a scripted model that
//    behaves as a capable one would (load the skill named beside the message, call the tool once it
//    is offered, look for it with move_search when it is not) counts the model calls until the
//    answer. The least any task needs is 2 (the tool call, then the answer); what is above that is
//    the cost of keeping skills and tools out of the prompt. Goal: at most 2 extra calls.
//
//   node bench/prompt-size.mjs            (after npm run build)
import { createServer } from "node:http";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { sparHome, startSpar } from "./suite/daemon.mjs";
import { message } from "./suite/spar-api.mjs";

const tokens = (text) => encode(text).length;

/** Input tokens of one chat-completions body, by part; 4 tokens of framing per message. */
function count(body) {
  const system = body.messages.filter((m) => m.role === "system").map((m) => m.content ?? "");
  const others = body.messages.filter((m) => m.role !== "system");
  const text = (m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? ""));
  const parts = {
    system: system.reduce((n, s) => n + tokens(s), 0),
    messages: others.reduce(
      (n, m) => n + tokens(text(m)) + (m.tool_calls ? tokens(JSON.stringify(m.tool_calls)) : 0),
      0,
    ),
    framing: body.messages.length * 4,
    tools: body.tools?.length ? tokens(JSON.stringify(body.tools)) : 0,
  };
  return {
    ...parts,
    total: parts.system + parts.messages + parts.framing + parts.tools,
    toolCount: body.tools?.length ?? 0,
  };
}

/**
 * The scripted model. Each task says which skill and tool it needs and a query for move_search;
 * the model only calls what the request offers, as a real one must.
 */
function startModel() {
  const state = { bodies: [], task: undefined };
  const server = createServer((req, res) => {
    const parts = [];
    req.on("data", (d) => parts.push(d));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(parts).toString("utf8"));
      state.bodies.push(body);
      const reply = decide(body, state.task);
      const finish = reply.tool_calls ? "tool_calls" : "stop";
      const base = { id: `c${state.bodies.length}`, created: 0, model: "m" };
      if (!body.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            ...base,
            object: "chat.completion",
            choices: [{ index: 0, message: reply, finish_reason: finish }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
        return;
      }
      const chunk = (choices, extra = {}) =>
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, ...extra })}\n\n`;
      const delta = reply.tool_calls
        ? { role: "assistant", tool_calls: reply.tool_calls.map((c, index) => ({ index, ...c })) }
        : { role: "assistant", content: reply.content };
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk([{ index: 0, delta, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: {}, finish_reason: finish }]));
      res.write(chunk([], { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
      res.end("data: [DONE]\n\n");
    });
  });
  return new Promise((done) =>
    server.listen(0, "127.0.0.1", () =>
      done({ url: `http://127.0.0.1:${server.address().port}/v1`, state, close: () => server.close() }),
    ),
  );
}

let callId = 0;
const call = (name, args) => ({
  role: "assistant",
  content: null,
  tool_calls: [
    { id: `call_${++callId}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
  ],
});

function decide(body, task) {
  const offered = new Set((body.tools ?? []).map((t) => t.function.name));
  const called = body.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name));
  const lastUser = body.messages.findLast((m) => m.role === "user")?.content ?? "";
  if (!task) return { role: "assistant", content: "Hi." };
  if (called.includes(task.tool)) return { role: "assistant", content: "Done." };
  if (task.skill && !called.includes("skill_load") && offered.has("skill_load")) {
    // A model loads the skill the prompt names beside the message; one it is not shown it searches for.
    if (lastUser.includes(task.skill)) return call("skill_load", { name: task.skill });
    if (!called.includes("skill_search")) return call("skill_search", { query: task.message });
    return call("skill_load", { name: task.skill });
  }
  if (offered.has(task.tool)) return call(task.tool, task.args);
  if (offered.has("move_search") && !called.includes("move_search"))
    return call("move_search", { query: task.query });
  return { role: "assistant", content: `I cannot reach ${task.tool}.` };
}

const TASKS = [
  {
    label: "a skill and a deferred tool: review a pull request",
    message: "Please review the pull request on my branch and tell me what to fix.",
    skill: "review-pull-request",
    tool: "shell_exec",
    args: { argv: ["git", "status", "--short"] },
    query: "run a command",
  },
  {
    label: "a deferred tool alone: save a note to a file",
    message: "Write the text 'buy milk' into a file named notes.txt.",
    tool: "file_write",
    args: { path: "notes.txt", content: "buy milk\n" },
    query: "write a file",
  },
  {
    label: "a deferred tool alone: fetch a web page",
    message: "Get the page at https://example.com and tell me its title.",
    tool: "web_fetch",
    args: { url: "https://example.com/" },
    query: "fetch a web page",
  },
];

const model = await startModel();
// The tasks' moves run unasked (shell_exec asks by default): this measures prompts, not approvals.
const data = await sparHome({
  llmUrl: model.url,
  extraToml:
    '\n[creed]\nreflect = false\n[[approvals.rules]]\nfighter = "spar"\nmove = "shell_exec"\naction = "allow"\n',
});
const daemon = await startSpar(data);
try {
  const moves = await (await fetch(`${daemon.api}/moves`)).json();
  await message(daemon.api, "spar", "hello");
  const hello = count(model.state.bodies[0]);
  console.log(`Installed: ${moves.moves.length} moves, ${moves.skills.length} skills.`);
  console.log(
    `"hello" to the default fighter: ${hello.total} input tokens (o200k) — system prompt ${hello.system}, messages ${hello.messages}, framing ${hello.framing}, ${hello.toolCount} tools ${hello.tools}; goal ≤ 1,000 (OpenClaw: 14,160)`,
  );
  let worst = 0;
  for (const task of TASKS) {
    model.state.task = task;
    const before = model.state.bodies.length;
    const reply = await message(daemon.api, "spar", task.message, { bout: "new" });
    const bodies = model.state.bodies.slice(before);
    const calls = bodies.length;
    const extra = calls - 2;
    worst = Math.max(worst, extra);
    const path = bodies
      .slice(1)
      .map((b) => b.messages.filter((m) => m.tool_calls).at(-1)?.tool_calls[0].function.name)
      .join(" → ");
    console.log(
      `${task.label}: ${calls} model calls (${extra} extra; ${path} → answer "${reply.response}"), last request ${count(bodies.at(-1)).total} tokens`,
    );
  }
  console.log(`most extra model calls for a task: ${worst}; goal ≤ 2`);
} finally {
  await daemon.stop();
  data.remove();
  model.close();
}
