/**
 * Keys that can reach an object's prototype (`__proto__`, `constructor`, `prototype`) are refused
 * wherever outside input becomes an object: config.toml, request bodies, WebSocket frames. Spar has
 * no field by those names, so refusing them costs nothing and closes prototype pollution for good.
 */
const FORBIDDEN = new Set(["__proto__", "constructor", "prototype"]);

/** The first forbidden key in `value` and where it is (`/a/0/b`), walking without recursion. */
export function findForbiddenKey(value: unknown): { key: string; path: string } | undefined {
  const stack: [unknown, string][] = [[value, ""]];
  while (stack.length > 0) {
    const [node, path] = stack.pop() as [unknown, string];
    if (typeof node !== "object" || node === null) continue;
    for (const key of Object.keys(node)) {
      if (FORBIDDEN.has(key)) return { key, path: `${path}/${key}` };
      stack.push([(node as Record<string, unknown>)[key], `${path}/${key}`]);
    }
  }
  return undefined;
}

/** The sentence every refusal uses: which key, where, and why. */
export function forbiddenKeyMessage(found: { key: string; path: string }, where: string): string {
  return (
    `${where}: the key "${found.key}" (at ${found.path}) is not allowed: it names a JavaScript ` +
    "object's prototype machinery, and Spar accepts no such key anywhere"
  );
}
