// A third-party plugin is plain JavaScript: the manifest says what it contributes, this module is
// imported only when a fighter first calls `dice_roll`. Input arrives validated against the schema.
import { randomInt } from "node:crypto";

export default {
  id: "moves-dice",
  apply({ hooks }) {
    const roll = {
      name: "dice_roll",
      async run({ n = 1, sides = 6 }) {
        const rolls = Array.from({ length: n }, () => randomInt(1, sides + 1));
        return { rolls, total: rolls.reduce((a, b) => a + b, 0) };
      },
    };
    hooks.move.resolve.tap((name) => (name === "dice_roll" ? roll : undefined));
  },
};
