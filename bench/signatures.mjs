// The cost of request signatures: verifyRequest per call (µs) for a typical GET and a POST with a
// Content-Digest, and requests per second against the built daemon for health and fighter-list
// calls, unsigned vs signed (each signed request freshly signed by the client, as the CLI does).
// After `npm run build`:  node bench/signatures.mjs [requests]
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fmt, isMain, printRows, ROOT, row, startDaemon, startMiniLlm } from "./lib.mjs";

const { privateKey, publicKey } = generateKeyPairSync("ed25519");

/** µs per verifyRequest call for an already signed request. */
function microbench({ signRequest, verifyRequest }, request) {
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
  return Number(process.hrtime.bigint() - started) / 1000 / n;
}

async function load(url, sign, total, signRequest) {
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

export async function signatures({ total = 4000 } = {}) {
  const sig = await import(join(ROOT, "dist", "lib", "http-signatures.js"));
  const target = "http://127.0.0.1:6660/api/v1/fighters";
  const body = JSON.stringify({ message: "Summarize the last three messages, please." });
  const rows = [
    row(
      "verifyRequest, GET /api/v1/fighters",
      fmt(microbench(sig, { method: "GET", targetUri: target, headers: { host: "127.0.0.1:6660" } }), "µs"),
      "—",
    ),
    row(
      "verifyRequest, POST with Content-Digest",
      fmt(
        microbench(sig, {
          method: "POST",
          targetUri: `${target}/spar/message`,
          headers: {
            host: "127.0.0.1:6660",
            "content-type": "application/json",
            "content-digest": sig.contentDigest(body),
          },
        }),
        "µs",
      ),
      "—",
    ),
  ];
  const llm = await startMiniLlm();
  const daemon = await startDaemon(llm.url, {
    toml: "[api]\nrate_limit_per_minute = 100000000\n",
    prepare: (home) =>
      writeFileSync(
        join(home, "keys", "authorized", "bench.pub"),
        publicKey.export({ type: "spki", format: "pem" }),
        { mode: 0o600 },
      ),
  });
  try {
    for (const path of ["/api/v1/health", "/api/v1/fighters"]) {
      const rates = {};
      for (const sign of [false, true]) {
        await load(`${daemon.url}${path}`, sign, total, sig.signRequest); // warm-up
        rates[sign] = await load(`${daemon.url}${path}`, sign, total, sig.signRequest);
      }
      const failed = rates.true.failed + rates.false.failed;
      rows.push(
        row(
          `GET ${path}, signed vs unsigned`,
          fmt(rates.true.rps, "req/s", 0),
          fmt(rates.false.rps, "req/s", 0),
          {
            ratio: rates.true.rps / rates.false.rps,
            note: `${total} requests per run, 32 at a time, over loopback${failed ? `; ${failed} failed` : ""}`,
          },
        ),
      );
    }
    return rows;
  } finally {
    await daemon.stop();
    llm.close();
  }
}

if (isMain(import.meta)) {
  console.log(`node ${process.version}\n`);
  printRows(await signatures({ total: Number(process.argv[2] ?? 4000) }));
}
