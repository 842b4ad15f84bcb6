// The event kind this plugin adds, merged into the SDK's event map so `events.publish` is typed.
// (Its manifest lists it too, in contributes.events: a plugin may publish only what it declares.)
import "spar/sdk";

declare module "spar/sdk" {
  interface SparEventMap {
    "note.added": { fighter_id: string; note_id: string; tags: string[] };
  }
}
