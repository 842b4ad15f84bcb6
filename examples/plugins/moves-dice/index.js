// @ts-check
// A third-party plugin in plain JavaScript, type-checked against the SDK (`spar/sdk`) through JSDoc.
// It shows every extension point a plugin has:
// - its own config table, `[moves-dice]`, checked against the schema in plugin.json before this
//   module is imported, and handed to `apply` with the defaults filled in;
// - a move, `dice_roll`, behind a capability of its own (`dice`), and run-time moves, one per
//   configured preset (`dice_roll_<name>`), offered through `move.list`;
// - a route on the API listener (`GET /api/v1/dice/stats`, behind the API's authentication);
// - a webhook on the webhook listener (`POST /dice/roll`), which verifies its own signature;
// - an event kind, `dice.rolled`, typed in events.d.ts and declared in plugin.json.
import { createHmac, randomInt, timingSafeEqual } from "node:crypto";
import { appendFileSync } from "node:fs";
import { join } from "node:path";

/** @typedef {import("spar/sdk").MoveHandler} MoveHandler */
/** @typedef {import("spar/sdk").MoveDeclaration} MoveDeclaration */
/**
 * @typedef {object} DiceSettings
 * @property {number} max_dice
 * @property {Record<string, { n: number, sides: number }>} presets
 * @property {string} webhook_secret_env
 */

/** @param {number} n @param {number} sides */
function roll(n, sides) {
  const rolls = Array.from({ length: n }, () => randomInt(1, sides + 1));
  return { rolls, total: rolls.reduce((a, b) => a + b, 0) };
}

/** @type {import("spar/sdk").SparPlugin<{ "moves-dice": DiceSettings }>} */
export default {
  id: "moves-dice",
  apply({ hooks, events, env }, { "moves-dice": settings }) {
    const stats = { rolls: 0, dice: 0 };

    /** A move that rolls, records the roll in the fighter's workspace and says so on the bus. */
    /** @param {string} name @param {(input: Record<string, unknown>) => { n: number, sides: number }} dice @returns {MoveHandler} */
    const mover = (name, dice) => ({
      name,
      async run(input, { fighter, workspace }) {
        const { n, sides } = dice(input);
        if (n > settings.max_dice)
          throw new Error(`at most ${settings.max_dice} dice ([moves-dice] max_dice)`);
        const result = roll(n, sides);
        stats.rolls += 1;
        stats.dice += n;
        appendFileSync(join(workspace, "dice.log"), `${n}d${sides}: ${result.rolls.join(" ")}\n`);
        events.publish({ kind: "dice.rolled", fighter_id: fighter.id, by: "move", ...result });
        return result;
      },
    });

    /** @type {Map<string, MoveHandler>} */
    const handlers = new Map([
      ["dice_roll", mover("dice_roll", (i) => ({ n: Number(i.n ?? 1), sides: Number(i.sides ?? 6) }))],
    ]);
    /** @type {MoveDeclaration[]} */
    const presets = Object.entries(settings.presets).map(([preset, dice]) => {
      const name = `dice_roll_${preset}`;
      handlers.set(
        name,
        mover(name, () => dice),
      );
      return {
        name,
        description: `Roll ${dice.n}d${dice.sides} (the "${preset}" preset).`,
        capability: "dice",
        input_schema: { type: "object", additionalProperties: false, properties: {} },
      };
    });

    hooks.move.resolve.tap((name) => handlers.get(name));
    hooks.move.list.tap((moves) => [...moves, ...presets]);

    hooks.arena.routes.tap((routes) => {
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/dice/stats",
        handler: async () => ({ body: { ...stats, presets: presets.map((p) => p.name) } }),
      });
      // Signed by the sender: `x-dice-signature: sha256=<hex HMAC-SHA256 of the raw body>`.
      routes.add({
        listener: "webhook",
        method: "POST",
        path: "/dice/roll",
        // Checked before the body is parsed; a delivery that fails gets 401 and goes no further.
        verify: (delivery) => {
          // The daemon's environment, .env included (process.env does not hold .env's variables).
          const secret = env[settings.webhook_secret_env];
          const given = String(delivery.headers["x-dice-signature"] ?? "");
          const wanted = `sha256=${createHmac("sha256", secret ?? "")
            .update(delivery.rawBody)
            .digest("hex")}`;
          return Boolean(
            secret &&
              given.length === wanted.length &&
              timingSafeEqual(Buffer.from(given), Buffer.from(wanted)),
          );
        },
        handler: async (request) => {
          const body = /** @type {{ n?: number, sides?: number }} */ (request.body ?? {});
          const result = roll(Math.min(body.n ?? 1, settings.max_dice), body.sides ?? 6);
          events.publish({ kind: "dice.rolled", by: "webhook", ...result });
          return { body: result };
        },
      });
    });
  },
};
