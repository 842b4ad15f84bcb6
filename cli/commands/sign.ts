import type { KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolveHome } from "../../lib/home.js";
import { CLI_KEY_ID, loadCliKey } from "../../lib/keys.js";
import { signedHeaders } from "../../lib/sign.js";
import { SparError } from "../../sdk/errors.js";
import { daemonUrl } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";

const HEADER_NAMES = {
  "signature-input": "Signature-Input",
  signature: "Signature",
  "content-digest": "Content-Digest",
};

/**
 * `spar sign <method> <path> [body]`: the headers that let one request in, one `Name: value` per line
 * (`curl -H @file` reads them). The path is the daemon's (`/api/v1/fighters`) or a full URL. Signed
 * with the CLI's key unless `--key <file> --key-id <name>`. Good once, within 300 s.
 */
export async function sign(
  args: string[],
  options: GlobalOptions & { key?: string; keyId?: string },
): Promise<void> {
  const [method = "", path = "", bodyArg] = args;
  const url = /^https?:\/\//i.test(path) ? path : `${daemonUrl()}${path.startsWith("/") ? "" : "/"}${path}`;
  const body = bodyArg === "-" ? await readStdin() : bodyArg;
  const { keyId, privateKey } = chooseKey(options);
  const headers = signedHeaders({ method, url, body, keyId, privateKey });
  if (options.json) return printJson({ method: method.toUpperCase(), url, headers });
  const lines = Object.entries(headers).map(
    ([name, value]) => `${HEADER_NAMES[name as keyof typeof HEADER_NAMES]}: ${value}`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

function chooseKey(options: { key?: string; keyId?: string }): {
  keyId: string;
  privateKey: string | KeyObject;
} {
  if (options.key) {
    if (!options.keyId) {
      throw new SparError(
        "VALIDATION_FAILED",
        "--key needs --key-id <name>: the name its public key was authorized under (spar key list)",
      );
    }
    try {
      return { keyId: options.keyId, privateKey: readFileSync(options.key, "utf8") };
    } catch (err) {
      throw new SparError("VALIDATION_FAILED", `cannot read --key ${options.key}: ${(err as Error).message}`);
    }
  }
  const home = resolveHome();
  const privateKey = loadCliKey(home);
  if (!privateKey) {
    throw new SparError(
      "VALIDATION_FAILED",
      `no CLI key in ${home}/keys (spar init makes one); or pass --key <file>`,
    );
  }
  return { keyId: options.keyId ?? CLI_KEY_ID, privateKey };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
