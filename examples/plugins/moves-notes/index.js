// @ts-check
// A third-party plugin that keeps data of its own: fighters' notes, in the collection its manifest
// declares (`data.collections.notes`). The daemon's store keeps them (SQLite or PostgreSQL, encrypted,
// durable before a write resolves); this file never opens a database, and reads no other plugin's data.
// It shows:
// - `api.data.notes` (search, find) and `api.data.transaction` (a cap checked and a note written as
//   one; a delete that checks whose note it is first);
// - moves behind a capability of its own (`notes`): note_add, note_find, note_delete;
// - a route on the API listener: `GET /api/v1/notes?fighter=<name or id>[&q=words][&limit=n][&after=id]`;
// - an event kind, `note.added`, typed in events.d.ts and declared in plugin.json.
import { randomUUID } from "node:crypto";

/** @typedef {{ id: string, fighter_id: string, text: string, tags?: string[], created_at: string }} Note */
/** @typedef {import("spar/sdk").Collection<Note>} Notes */
/** @typedef {import("spar/sdk").TxCollection<Note>} TxNotes */
/** @typedef {import("spar/sdk").MoveHandler} MoveHandler */

/** Newest first: the order the `[fighter_id, created_at]` index serves. */
const NEWEST_FIRST = { by: ["created_at"], desc: true };

/** @param {unknown} text */
const wordsOf = (text) =>
  String(text ?? "")
    .split(/\s+/)
    .filter(Boolean);

/** @type {import("spar/sdk").SparPlugin<{ "moves-notes": { max_per_fighter: number } }>} */
export default {
  id: "moves-notes",
  apply({ hooks, events, ring, data }, { "moves-notes": settings }) {
    const notes = /** @type {Notes} */ (data.notes);

    /**
     * A fighter's notes holding any of `words` (most of them first, then newest), else its newest.
     * @param {string} fighterId @param {string[]} words @param {number} limit @param {string} [after]
     */
    async function notesOf(fighterId, words, limit, after) {
      const query = { where: { fighter_id: fighterId }, order: NEWEST_FIRST, limit };
      if (words.length === 0) return notes.find({ ...query, after });
      return (await notes.search(words, query)).map((found) => found.doc);
    }

    /** @type {Record<string, MoveHandler>} */
    const handlers = {
      note_add: {
        name: "note_add",
        async run(input, { fighter }) {
          const note = /** @type {Note} */ ({
            id: randomUUID(),
            fighter_id: fighter.id,
            text: String(input.text),
            created_at: new Date().toISOString(),
            ...(Array.isArray(input.tags) ? { tags: input.tags.map(String) } : {}),
          });
          // The count and the insert as one: two notes added at once cannot both pass a full cap.
          await data.transaction(async (tx) => {
            const held = await /** @type {TxNotes} */ (tx.notes).count({ fighter_id: fighter.id });
            if (held >= settings.max_per_fighter) {
              throw new Error(`you keep ${held} notes, the most allowed ([moves-notes] max_per_fighter)`);
            }
            /** @type {TxNotes} */ (tx.notes).insert(note);
          });
          events.publish({
            kind: "note.added",
            fighter_id: fighter.id,
            note_id: note.id,
            tags: note.tags ?? [],
          });
          return note;
        },
      },
      note_find: {
        name: "note_find",
        async run(input, { fighter }) {
          return { notes: await notesOf(fighter.id, wordsOf(input.words), Number(input.limit ?? 10)) };
        },
      },
      note_delete: {
        name: "note_delete",
        async run(input, { fighter }) {
          const id = String(input.id);
          // Read and delete in one transaction: the note read is the note deleted.
          const deleted = await data.transaction(async (tx) => {
            const txNotes = /** @type {TxNotes} */ (tx.notes);
            const note = await txNotes.get(id);
            if (note?.fighter_id !== fighter.id) return false;
            txNotes.delete(id);
            return true;
          });
          if (!deleted) throw new Error(`you have no note with id ${JSON.stringify(id)}`);
          return { deleted: id };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));

    hooks.arena.routes.tap((routes) => {
      // Behind the API's authentication (a `read` key may list them). A fighter that does not exist is
      // FIGHTER_NOT_FOUND (404); a bad `limit` or an `after` that names no note come from api.data (400, 404).
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/notes",
        handler: async ({ query }) => {
          if (!query.fighter) {
            const message = "GET /api/v1/notes needs ?fighter=<name or id>";
            return { status: 400, body: { error: { code: "VALIDATION_FAILED", message } } };
          }
          const fighter = await ring.fighters.get(query.fighter);
          const limit = query.limit === undefined ? 50 : Number(query.limit);
          return {
            body: {
              fighter: { id: fighter.id, name: fighter.name },
              notes: await notesOf(fighter.id, wordsOf(query.q), limit, query.after),
            },
          };
        },
      });
    });
  },
};
