import { definePlugin } from "../../sdk/index.js";
import { createSandbox } from "../../sdk/kits/sandbox.js";
import { createDesktopMoves, type DesktopSettings } from "./desktop.js";

/**
 * The desktop moves (`desktop_screenshot`, `desktop_type`, `desktop_click`, `desktop_open_app`),
 * behind the `desktop` capability; the kernel refuses a fighter without the grant before a move
 * runs. The session (X11, Wayland, macOS) is chosen per call from `[moves.desktop] display` or the
 * daemon's environment, so a display that comes up after the daemon started is found.
 */
export default definePlugin<{ "moves.desktop": DesktopSettings }>({
  id: "moves-desktop",
  apply({ hooks, config, home }, sections) {
    const settings = sections["moves.desktop"];
    const sandbox = createSandbox(config.sandbox, home);
    const handlers = createDesktopMoves(settings, process.env, process.platform, sandbox);
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
  },
});
