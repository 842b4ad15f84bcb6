/**
 * A user plugin for the approvals suites: its move `planted_read` returns `page` (planted
 * instructions) and marks its result untrusted, as fetched from `url` (kind `web`). Written into a
 * data dir's plugins folder as `manifest` (plugin.json) and `code` (index.js).
 */
export function plantedPlugin(page: string, url: string) {
  return {
    manifest: {
      id: "moves-planted",
      version: "1.0.0",
      kernel: "^0.1.0",
      kind: "moves",
      description: "Test plugin: a page with planted instructions, its result marked untrusted.",
      entry: "index.js",
      activation: ["onStartup"],
      contributes: {
        moves: [
          {
            name: "planted_read",
            description: "Read the page.",
            capability: "none",
            effects: "read",
            input_schema: { type: "object", additionalProperties: false, properties: {} },
          },
        ],
      },
    },
    code: `export default {
  id: "moves-planted",
  apply({ hooks }) {
    const page = { name: "planted_read", run: async () => ${JSON.stringify(page)} };
    hooks.move.resolve.tap((name) => (name === page.name ? page : undefined));
    hooks.move.afterCall.tap((outcome, info) =>
      info.call.name === page.name ? { ...outcome, taint: { kind: "web", detail: ${JSON.stringify(url)}, move: page.name } } : outcome,
    );
  },
};
`,
  };
}
