import { createHash } from "node:crypto";

/** What every provider accepts as a tool name (OpenAI's rule, the strictest of them). */
export const MODEL_SAFE_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_LENGTH = 64;
const HASH_LENGTH = 8;

/**
 * The names a server's tools are offered under, `mcp_<server>_<tool>`, mapped to the server's own
 * names. A tool name is made model-safe by turning every character outside `[a-zA-Z0-9_-]` into `_`.
 * When that makes the name longer than 64 characters, or makes two tools of the server collide, the
 * tool gets a distinct name instead: as much of the safe name as fits, `_`, and the first 8 hex digits
 * of the SHA-256 of the server's own name for it. A tool whose name needed no change keeps it even
 * when a changed one collides with it. The result depends only on the set of names, not their order.
 *
 * @example
 * exposedNames("cal", ["list_events", "events.create"])
 * // Map { "mcp_cal_list_events" => "list_events", "mcp_cal_events_create" => "events.create" }
 */
export function exposedNames(server: string, tools: readonly string[]): Map<string, string> {
  const prefix = `mcp_${server}_`;
  const safe = new Map(tools.map((tool) => [tool, prefix + tool.replace(/[^a-zA-Z0-9_-]/g, "_")]));
  const unchanged = new Set(tools.filter((tool) => safe.get(tool) === prefix + tool));
  const count = new Map<string, number>();
  for (const name of safe.values()) count.set(name, (count.get(name) ?? 0) + 1);

  const out = new Map<string, string>();
  const hashed: string[] = [];
  for (const tool of [...tools].sort()) {
    const name = safe.get(tool) as string;
    const clashes = (count.get(name) ?? 0) > 1;
    if (name.length <= MAX_LENGTH && (!clashes || unchanged.has(tool))) out.set(name, tool);
    else hashed.push(tool);
  }
  for (const tool of hashed) {
    const digest = createHash("sha256").update(tool).digest("hex").slice(0, HASH_LENGTH);
    const name = `${(safe.get(tool) as string).slice(0, MAX_LENGTH - HASH_LENGTH - 1)}_${digest}`;
    // Two names sharing 32 bits of hash and a 55-character stem: the later one is not offered.
    if (!out.has(name)) out.set(name, tool);
  }
  return out;
}
