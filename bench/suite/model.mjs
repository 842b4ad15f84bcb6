// The fake model: an OpenAI-compatible chat-completions server on 127.0.0.1 that answers at once.
// A request with "stream": true is answered as OpenAI does, in server-sent events (a role chunk, the
// content, a finish chunk, a usage chunk when stream_options.include_usage asks for it, [DONE]);
// one without it gets a plain chat.completion. It counts requests and keeps the first `keep` bodies.
//
// For the WebSocket delta benchmark the content can be streamed as `chunks` pieces, `gapMs` apart,
// each carrying a marker ⟨n⟩; the time each piece was written (performance.now(), this process's
// clock) is kept in `written`, so a client in this process can time the piece's arrival.
import { createServer } from "node:http";
import { post } from "./http.mjs";

/** The text of the streamed piece number `n`: a marker a client can find in any delta holding it. */
export const marker = (n) => `⟨${n}⟩ `;
export const MARKER_PATTERN = /⟨(\d+)⟩/g;

export async function startFakeModel({ answer = "Hi.", keep = 1 } = {}) {
  const state = {
    answer,
    chunks: 1,
    gapMs: 0,
    requests: 0,
    bodies: [],
    /** marker number → performance.now() when that piece was written */
    written: new Map(),
    nextMarker: 0,
  };

  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "m", object: "model", owned_by: "bench" }] }));
      return;
    }
    const parts = [];
    req.on("data", (d) => parts.push(d));
    req.on("end", () => {
      const raw = Buffer.concat(parts).toString("utf8");
      state.requests += 1;
      if (state.bodies.length < keep) state.bodies.push(raw);
      let body = {};
      try {
        body = JSON.parse(raw);
      } catch {
        // answered all the same: the benchmark is about the caller, not this server
      }
      const usage = { prompt_tokens: Math.ceil(raw.length / 4), completion_tokens: 1, total_tokens: 0 };
      usage.total_tokens = usage.prompt_tokens + 1;
      if (body.stream) streamed(res, body, usage);
      else unary(res, usage);
    });
  });

  function unary(res, usage) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "c",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: state.answer }, finish_reason: "stop" }],
        usage,
      }),
    );
  }

  function streamed(res, body, usage) {
    const event = (choices, extra = {}) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices, ...extra })}\n\n`;
    const piece = (delta, finish = null) => event([{ index: 0, delta, finish_reason: finish }]);
    const tail = () =>
      `${piece({}, "stop")}${body.stream_options?.include_usage ? event([], { usage }) : ""}data: [DONE]\n\n`;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    if (state.chunks <= 1) {
      res.end(`${piece({ role: "assistant", content: state.answer })}${tail()}`);
      return;
    }
    res.write(piece({ role: "assistant", content: "" }));
    let left = state.chunks;
    const next = () => {
      if (res.destroyed) return;
      const n = state.nextMarker++;
      state.written.set(n, performance.now());
      res.write(piece({ content: marker(n) }));
      left -= 1;
      if (left > 0) setTimeout(next, state.gapMs);
      else res.end(tail());
    };
    setTimeout(next, state.gapMs);
  }

  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    url: `${origin}/v1`,
    state,
    /** Streams the next replies as `chunks` marked pieces `gapMs` apart (1: the whole answer at once). */
    stream(chunks, gapMs) {
      state.chunks = chunks;
      state.gapMs = gapMs;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The model alone, called as the daemon calls it (streamed), by the benchmarks' own client. */
export const callModel = (llmUrl) =>
  post(`${llmUrl}/chat/completions`, {
    model: "m",
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ],
  });
