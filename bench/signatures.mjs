// The cost of request signatures: verifyRequest per call (µs) for a typical GET and a POST with a
// Content-Digest, and requests per second against the built daemon for health and fighter-list
// calls, unsigned vs signed (each signed request freshly signed by the client, as the CLI does).
// After `npm run build`:  node bench/signatures.mjs [requests]
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { contentDigest, signRequest, verifyRequest } from "../dist/kernel/http-signatures.js";
import { startDaemon, startMiniLlm } from "./lib.mjs";

const total = Number(process.argv[2] ?? 4000);
const { privateKey, publicKey } = generateKeyPairSync("ed25519");

function microbench(label, request) {
  const keys = () => publicKey;
  const signed = {
    ...request,
    headers: { ...request.headers, ...signRequest(request, { keyId: "bench", privateKey }) },
  };
  const hasBody = request.headers["content-digest"] !== undefined;
  for (let i = 0; i < 1000; i++) verifyRequest(signed, { keys, hasBody });
  const n = 10_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    if (!verifyRequest(signed, { keys, hasBody }).ok) throw new Error("verification failed");
  }
  const us = Number(process.hrtime.bigint() - started) / 1000 / n;
  console.log(`  verifyRequest, ${label.padEnd(30)} ${us.toFixed(1).padStart(6)} µs per call`);
}

console.log(`node ${process.version}\n`);
const target = "http://127.0.0.1:6660/api/v1/fighters";
microbench("GET /api/v1/fighters", { method: "GET", targetUri: target, headers: { host: "127.0.0.1:6660" } });
const body = JSON.stringify({ message: "Summarize the last three messages, please." });
microbench("POST with Content-Digest", {
  method: "POST",
  targetUri: `${target}/spar/message`,
  headers: {
    host: "127.0.0.1:6660",
    "content-type": "application/json",
    "content-digest": contentDigest(body),
  },
});

async function load(url, sign) {
  const concurrency = 32;
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next += 1;
        const headers = sign
          ? signRequest({ method: "GET", targetUri: url, headers: {} }, { keyId: "bench", privateKey })
          : {};
        const response = await fetch(url, { headers });
        await response.arrayBuffer();
        if (!response.ok) failed += 1;
      }
    }),
  );
  return { rps: total / ((performance.now() - started) / 1000), failed };
}

const llm = await startMiniLlm();
const daemon = await startDaemon(llm.url, "[api]\nrate_limit_per_minute = 100000000\n", (home) =>
  writeFileSync(
    join(home, "keys", "authorized", "bench.pub"),
    publicKey.export({ type: "spki", format: "pem" }),
    {
      mode: 0o600,
    },
  ),
);
try {
  console.log(`\n${total} requests per run, 32 at a time, over loopback`);
  for (const path of ["/api/v1/health", "/api/v1/fighters"]) {
    for (const sign of [false, true]) {
      await load(`${daemon.url}${path}`, sign); // warm-up
      const { rps, failed } = await load(`${daemon.url}${path}`, sign);
      console.log(
        `  ${path.padEnd(18)} ${sign ? "signed  " : "unsigned"} ${rps.toFixed(0).padStart(6)} req/s${failed ? ` (${failed} failed)` : ""}`,
      );
    }
  }
} finally {
  await daemon.stop();
  llm.close();
}
