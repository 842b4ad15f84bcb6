// 4. WebSocket delta latency: the fake model streams each reply as marked pieces a few ms apart and
// notes when it wrote each one; a WebSocket client in this process sends chat frames over
// /api/v1/ws and notes when the message.delta holding each marker arrives. One clock serves both.
// Baseline: the same pieces read straight from the model server by a streaming HTTP client.
import { request as httpRequest } from "node:http";
import WebSocket from "ws";
import { withSpar } from "../suite/daemon.mjs";
import { MARKER_PATTERN, startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { spawnFighters } from "../suite/spar-api.mjs";
import { p50p99, percentile } from "../suite/stats.mjs";

/** For each marker in `text`, the time from its write by the model server to now. */
function arrivals(text, written, into) {
  const now = performance.now();
  for (const [, n] of text.matchAll(MARKER_PATTERN)) {
    const at = written.get(Number(n));
    if (at !== undefined) into.push(now - at);
  }
}

/** One streamed call of the model server, timing each marker as its bytes arrive. */
function directStream(llm, into) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] });
    const req = httpRequest(
      `${llm.url}/chat/completions`,
      { method: "POST", headers: { "content-type": "application/json" } },
      (res) => {
        res.setEncoding("utf8");
        res.on("data", (text) => arrivals(text, llm.state.written, into));
        res.on("end", resolve);
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function connect(url) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once("open", () => resolve(socket));
    socket.once("error", reject);
  });
}

export async function ws({ turns, warmup, chunks, gapMs }) {
  const llm = await startFakeModel();
  llm.stream(chunks, gapMs);
  try {
    const direct = [];
    for (let t = 0; t < warmup + turns; t++) await directStream(llm, t < warmup ? [] : direct);
    return await withSpar(llm.url, { load: true }, async (daemon) => {
      await spawnFighters(daemon.api, "ws-", 1);
      const socket = await connect(`${daemon.url.replace("http", "ws")}/api/v1/ws`);
      const latencies = [];
      let sink = [];
      let pending;
      let deltas = 0;
      socket.on("message", (data) => {
        const frame = JSON.parse(data.toString());
        if (frame.type === "event" && frame.kind === "message.delta") {
          deltas += 1;
          arrivals(frame.text, llm.state.written, sink);
        } else if (frame.type === "reply" || frame.type === "error") {
          pending?.(frame);
        }
      });
      try {
        for (let t = 0; t < warmup + turns; t++) {
          sink = t < warmup ? [] : latencies;
          const reply = await new Promise((resolve) => {
            pending = resolve;
            socket.send(
              JSON.stringify({ type: "chat", id: String(t), fighter_id: "ws-0", message: `turn ${t}` }),
            );
          });
          if (reply.type === "error") throw new Error(`chat ${t} failed: ${JSON.stringify(reply.error)}`);
        }
      } finally {
        socket.close();
      }
      const expected = turns * chunks;
      return {
        title: "4. WebSocket delta latency",
        notes: [
          `${turns} chat frames on one WebSocket (after ${warmup} warm-up), each reply streamed by the model as ${chunks} pieces ${gapMs} ms apart: ${latencies.length} of ${expected} pieces timed (${deltas} message.delta events in all)`,
          "latency: from the model server writing a piece to the WebSocket client receiving the message.delta that holds it (one process, one clock)",
          `baseline: the same pieces read straight from the model server by a streaming HTTP client, ${direct.length} pieces`,
        ],
        figures: [
          figure({
            label: "WebSocket message.delta latency",
            measured: p50p99(latencies),
            baseline: `model → client directly ${p50p99(direct)}`,
            ratio: percentile(latencies, 50) / percentile(direct, 50),
          }),
        ],
      };
    });
  } finally {
    await llm.close();
  }
}
