import { definePlugin, type MoveHandler } from "../../kernel/sdk.js";

/**
 * `fighter_message {to, content}`: a turn of another fighter, started from inside this one. The call
 * carries this turn's chain and signal, so a message back to a fighter already waiting in the chain
 * is refused at once (CONFLICT, as a tool error) instead of waiting on itself, and the other turn is
 * cancelled when this one is (or when this call runs out of time).
 */
export default definePlugin({
  id: "moves-fighters",
  apply({ hooks, ring }) {
    const fighterMessage: MoveHandler = {
      name: "fighter_message",
      async run(input, { fighter, signal, chain }) {
        const reply = await ring.fighters.messageTo(fighter.id, String(input.to), String(input.content), {
          signal,
          chain,
        });
        return { from: String(input.to), response: reply.response, bout_id: reply.bout_id };
      },
    };
    hooks.move.resolve.tap((name) => (name === fighterMessage.name ? fighterMessage : undefined));
  },
});
