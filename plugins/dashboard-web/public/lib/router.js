/**
 * Hash routing: the page is one document at `/`, and each view is a `#/…` address, so links,
 * the back button and bookmarks work without the server knowing any path but `/`.
 */
import { useEffect, useState } from "../vendor/standalone.module.js";

/** The views, in the navigation's order, with the label each link shows. */
export const VIEWS = [
  ["fighters", "Fighters"],
  ["chat", "Chat"],
  ["approvals", "Approvals"],
  ["gorillas", "Gorillas"],
  ["schedules", "Schedules"],
  ["troops", "Troops"],
  ["moves", "Moves"],
  ["events", "Events"],
  ["channels", "Channels"],
  ["usage", "Usage"],
];

/**
 * `#/fighters/a%20b/bouts/x` → { view: "fighters", parts: ["a b", "bouts", "x"], bare: false }; the
 * bare address (`#/` or none) is `bare`, its view chosen by the key's scope (lib/access.js).
 */
export function parseHash(hash) {
  const segments = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const parts = segments.slice(1).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  const view = segments[0] ?? "fighters";
  return {
    view: VIEWS.some(([name]) => name === view) ? view : "unknown",
    parts,
    bare: segments.length === 0,
  };
}

/** A view's address from its segments, each escaped: href("fighters", id) → "#/fighters/<id>". */
export function href(...segments) {
  return `#/${segments.map((s) => encodeURIComponent(s)).join("/")}`;
}

/** The current route, updated on every hash change. */
export function useRoute() {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}
