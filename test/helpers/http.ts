/** Raw HTTP for security tests: every header under the test's control, and correctly signed requests. */
import type { KeyObject } from "node:crypto";
import { request as httpRequest } from "node:http";
import { gunzipSync } from "node:zlib";
import { contentDigest, signRequest } from "../../lib/http-signatures.js";
import { documentOf } from "./daemon.js";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json<T = { error: { code: string; message: string } }>(): T;
}

/** A request with full control of every header (fetch will not let a test set Host). */
export function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
) {
  return new Promise<RawResponse>((done, fail) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const data = Buffer.concat(chunks);
        const answer = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: data,
          json: () => JSON.parse(data.toString()),
        };
        // As daemon.ts's request(): a JSON answer matches what the daemon's document says of it.
        const type = res.headers["content-type"] ?? null;
        const json = type?.startsWith("application/json") && data.length > 0;
        // A compressed answer (a test asking for gzip) is checked as it was before compression.
        const plain = () => (res.headers["content-encoding"] === "gzip" ? gunzipSync(data) : data);
        documentOf(`http://127.0.0.1:${port}`)
          .then((checker) =>
            checker?.check(
              method,
              path,
              answer.status,
              type,
              json ? JSON.parse(plain().toString()) : undefined,
            ),
          )
          .then((mismatch) =>
            mismatch
              ? fail(new Error(`the answer does not match the OpenAPI document: ${mismatch}`))
              : done(answer),
          )
          .catch(fail);
      });
    });
    req.on("error", fail);
    req.end(body);
  });
}

/** Headers of a correctly signed request (its Host, creation time and nonce may be chosen). */
export function signed(
  port: number,
  method: string,
  path: string,
  key: { id: string; privateKey: KeyObject },
  body?: string,
  options: { created?: number; host?: string; nonce?: string } = {},
): Record<string, string> {
  const host = options.host ?? `127.0.0.1:${port}`;
  const headers: Record<string, string> = { host };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    headers["content-digest"] = contentDigest(body);
  }
  const signature = signRequest(
    { method, targetUri: `http://${host}${path}`, headers },
    { keyId: key.id, privateKey: key.privateKey, created: options.created, nonce: options.nonce },
  );
  return { ...headers, ...signature };
}
