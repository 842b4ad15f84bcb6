/**
 * The secrets `[channels.slack]` names: a missing one, or a token of the wrong kind, stops the
 * daemon with CONFIG_INVALID naming the variable and the wizard, never showing the value.
 */
import { describe, expect, it } from "vitest";
import { readSecrets, type SlackSettings } from "./settings.js";

const settings: SlackSettings = {
  token_env: "MY_SLACK_TOKEN",
  signing_secret_env: "MY_SLACK_SECRET",
  allowlist: [],
  owners: [],
  fighter: "spar",
  api_root: "https://slack.com",
  path: "/slack/events",
  rate_per_minute: 20,
};

describe("readSecrets", () => {
  it("reads both from the variables the table names", () => {
    expect(readSecrets(settings, { MY_SLACK_TOKEN: " xoxb-1-abc ", MY_SLACK_SECRET: "s3cr3t" })).toEqual({
      token: "xoxb-1-abc",
      signingSecret: "s3cr3t",
    });
  });

  it.each([
    ["a missing token", { MY_SLACK_SECRET: "s" }, "MY_SLACK_TOKEN", /is not set/],
    [
      "a user token",
      { MY_SLACK_TOKEN: "xoxp-123-secretvalue", MY_SLACK_SECRET: "s" },
      "MY_SLACK_TOKEN",
      /xoxb-/,
    ],
    [
      "an app-level token",
      { MY_SLACK_TOKEN: "xapp-1-secretvalue", MY_SLACK_SECRET: "s" },
      "MY_SLACK_TOKEN",
      /xoxb-/,
    ],
    ["a missing signing secret", { MY_SLACK_TOKEN: "xoxb-1-abc" }, "MY_SLACK_SECRET", /Signing Secret/],
    [
      "a blank signing secret",
      { MY_SLACK_TOKEN: "xoxb-1-abc", MY_SLACK_SECRET: "  " },
      "MY_SLACK_SECRET",
      /is not set/,
    ],
  ])("refuses %s, naming the variable", (_, env, variable, problem) => {
    let caught: unknown;
    try {
      readSecrets(settings, env);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code: "CONFIG_INVALID", extra: { variable } });
    const message = (caught as Error).message;
    expect(message).toContain(variable);
    expect(message).toMatch(problem);
    expect(message).toContain("spar channel setup slack");
    expect(message).not.toContain("secretvalue");
  });
});
