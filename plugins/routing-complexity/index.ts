/**
 * `[model_routing]` (a kernel table, since the tiers are endpoints the operator pairs keys with):
 * for a fighter whose manifest names no model, the message is classified with no model call
 * (length, code, reasoning and planning words, several questions, images) and goes to that tier's
 * provider and model, or `default_model` when the tier is not configured or routing is off.
 */
import { definePlugin } from "../../sdk/index.js";
import { routeModel } from "./classify.js";

export default definePlugin({
  id: "routing-complexity",
  apply({ hooks, config, log }) {
    hooks.provider.route.tap(async (model, { fighter, text }) => {
      const routed = routeModel(text, config.model_routing, model);
      if (routed.classification) {
        const { tier, score, reasons } = routed.classification;
        log.info("routed", {
          fighter: fighter.name,
          tier,
          score,
          reasons,
          model: routed.model.model,
          fighter_id: fighter.id,
        });
      }
      return routed.model;
    });
  },
});
