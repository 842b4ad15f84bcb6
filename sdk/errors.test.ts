import { describe, expect, it } from "vitest";
import { isSparError, SparError, wrapPluginError } from "./errors.js";

describe("wrapPluginError", () => {
  it("names the plugin and hook in front of a failure's message", () => {
    const err = wrapPluginError("moves-x", "move.execute", new Error("boom"));
    expect(isSparError(err, "PLUGIN_FAILED")).toBe(true);
    expect(err.message).toBe("plugin moves-x failed in move.execute: boom");
  });

  it("leaves a budget's refusal as the user reads it, naming the plugin in its fields", () => {
    const refusal = new SparError("BUDGET_EXCEEDED", "the budget global:daily is used up", {
      budget: "global:daily",
    });
    const err = wrapPluginError("policy-budgets", "spend.reserve", refusal);
    expect(err.message).toBe("the budget global:daily is used up");
    expect(err.toJSON().error).toMatchObject({
      code: "BUDGET_EXCEEDED",
      budget: "global:daily",
      plugin: "policy-budgets",
      hook: "spend.reserve",
    });
  });
});
