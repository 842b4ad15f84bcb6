/**
 * The web dashboard: its files are published at `/` on the API listener, and that is all the server
 * side there is. The page (`public/`, plain ES modules with Preact + htm vendored at build time) calls
 * the same API as any client, under the same authentication, so nothing here can see more than a
 * client could.
 */
import { join } from "node:path";
import { definePlugin } from "../../sdk/index.js";

export default definePlugin({
  id: "dashboard-web",
  apply({ hooks }) {
    // Built beside this module by scripts/copy-manifests.mjs: dist/plugins/dashboard-web/public.
    const dir = join(import.meta.dirname, "public");
    hooks.arena.routes.tap((routes) => routes.add({ listener: "public", prefix: "/", dir }));
  },
});
