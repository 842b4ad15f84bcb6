/**
 * The fields of a message to a fighter, one definition for both ways of sending one: the body of
 * `POST /fighters/:id/message` (routes.ts) and a WebSocket `chat` frame (ws-frames.ts). Same
 * schema, same strictness (unknown keys refused), same words in the errors.
 */
export const MESSAGE_FIELDS = {
  message: { type: "string", minLength: 1 },
  bout_id: { type: "string", pattern: "^[0-9a-fA-F-]{36}$", description: "a bout id (a UUID)" },
  bout: { const: "new" },
} as const;

/** A name or id as a path parameter (`:id`) takes it, and a frame's `fighter_id`. */
export const ID_PARAM = { type: "string", minLength: 1, maxLength: 200 } as const;
