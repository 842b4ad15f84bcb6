/**
 * What a fetched body is and how to read it: HTML becomes readable text, text and JSON (and XML,
 * YAML, scripts) are decoded as they are, anything else is refused with a one-line summary instead
 * of its bytes. A body without a content type is sniffed: HTML by its opening, text when it holds no
 * NUL byte.
 */
import type { IncomingHttpHeaders } from "node:http";
import { SparError } from "../../sdk/index.js";
import { windows1252 } from "./entities.js";
import { htmlToText } from "./html-text.js";

export interface Media {
  /** The media type without parameters, lowercase ("text/html"); "" when the server sent none. */
  type: string;
  charset?: string;
  kind: "html" | "text" | "sniff";
}

const TEXT_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/javascript",
  "application/ecmascript",
  "application/x-javascript",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/x-ndjson",
  "application/sql",
  "application/graphql",
  "application/x-sh",
  "application/x-www-form-urlencoded",
]);

/** The body's media from its headers; UNSUPPORTED_MEDIA_TYPE (with type and size) for binary ones. */
export function mediaOf(url: string, headers: IncomingHttpHeaders): Media {
  const header = String(headers["content-type"] ?? "");
  const [essence = "", ...params] = header.split(";");
  const type = essence.trim().toLowerCase();
  const charset = params
    .map((p) => /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(p)?.[1])
    .find((c) => c !== undefined);
  const base = { type, ...(charset ? { charset: charset.toLowerCase() } : {}) };
  if (type === "") return { ...base, kind: "sniff" };
  if (type === "text/html" || type === "application/xhtml+xml") return { ...base, kind: "html" };
  if (type.startsWith("text/") || TEXT_TYPES.has(type) || /^application\/[\w.+-]+\+(json|xml)$/.test(type))
    return { ...base, kind: "text" };
  const length = Number(headers["content-length"]);
  const size = Number.isFinite(length) && length >= 0 ? `, ${length} bytes` : "";
  throw new SparError(
    "UNSUPPORTED_MEDIA_TYPE",
    `web_fetch reads web pages, text and JSON; ${url} is ${type}${size}, which it does not read`,
  );
}

function bomCharset(body: Buffer): string | undefined {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return "utf-8";
  if (body[0] === 0xfe && body[1] === 0xff) return "utf-16be";
  if (body[0] === 0xff && body[1] === 0xfe) return "utf-16le";
  return undefined;
}

/** `<meta charset=…>` or `<meta http-equiv=… content="…; charset=…">` near the top of a page. */
function metaCharset(body: Buffer): string | undefined {
  const head = body.subarray(0, 4096).toString("latin1");
  return /<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)/i.exec(head)?.[1]?.toLowerCase();
}

function decode(body: Buffer, labels: (string | undefined)[]): string {
  for (const label of labels) {
    if (!label) continue;
    try {
      const decoder = new TextDecoder(label);
      // Node 20 reads windows-1252 (and latin1, which means it) as ISO-8859-1: 0x80–0x9F done here.
      if (decoder.encoding === "windows-1252")
        return body.toString("latin1").replace(/[\x80-\x9f]/g, (c) => windows1252(c.charCodeAt(0)));
      return decoder.decode(body);
    } catch {
      // An unknown charset name: try the next source, then UTF-8.
    }
  }
  return new TextDecoder("utf-8").decode(body);
}

export interface FetchResult {
  url: string;
  status: number;
  content_type: string;
  title?: string;
  text: string;
  truncated: boolean;
}

/** The move's answer for a fetched body. */
export function readableResult(
  response: { url: string; status: number; body: Buffer; truncated: boolean },
  media: Media,
): FetchResult {
  const { body } = response;
  let kind = media.kind;
  let type = media.type;
  if (kind === "sniff") {
    const start = body.subarray(0, 1024);
    const opening = start
      .toString("latin1")
      .replace(/^\ufeff|^\xef\xbb\xbf/, "")
      .trimStart();
    if (/^<(!doctype\s+html|html|head|body)[\s>]/i.test(opening)) [kind, type] = ["html", "text/html"];
    else if (!start.includes(0) || bomCharset(body)?.startsWith("utf-16"))
      [kind, type] = ["text", "text/plain"];
    else
      throw new SparError(
        "UNSUPPORTED_MEDIA_TYPE",
        `web_fetch reads web pages, text and JSON; ${response.url} sent ${body.length} bytes of binary data without a content type`,
      );
  }
  const labels = [bomCharset(body), media.charset, kind === "html" ? metaCharset(body) : undefined];
  const text = decode(body, labels);
  const base = { url: response.url, status: response.status, content_type: type };
  if (kind === "html") {
    const page = htmlToText(text, response.url);
    return {
      ...base,
      ...(page.title ? { title: page.title } : {}),
      text: page.text,
      truncated: response.truncated,
    };
  }
  return { ...base, text, truncated: response.truncated };
}
