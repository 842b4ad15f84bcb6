/**
 * Slack's retry headers as the webhook reads them: a retry is named by `X-Slack-Retry-Num`, and
 * anything malformed or repeated is no retry at all (the event id decides replays, not the header).
 */
import { describe, expect, it } from "vitest";
import { retryOf } from "./webhook.js";

describe("retryOf", () => {
  it("reads the attempt and the reason", () => {
    expect(retryOf({ "x-slack-retry-num": "2", "x-slack-retry-reason": "http_timeout" })).toEqual({
      num: 2,
      reason: "http_timeout",
    });
    expect(retryOf({ "x-slack-retry-num": "1" })).toEqual({ num: 1 });
  });

  it.each([
    ["no header", {}],
    ["a non-number", { "x-slack-retry-num": "one" }],
    ["a repeated header", { "x-slack-retry-num": ["1", "2"] }],
    ["an absurd number", { "x-slack-retry-num": "99999" }],
  ])("sees no retry in %s", (_, headers) => {
    expect(retryOf(headers)).toBeUndefined();
  });
});
