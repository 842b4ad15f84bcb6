import { describe, expect, it } from "vitest";
import { parseOwners, platformOf } from "./channel-platforms.js";

describe("--owner", () => {
  const telegram = platformOf("telegram");
  const allowlist = [424242, 555];

  it("takes ids on the allowlist, in the allowlist's form, each once", () => {
    expect(parseOwners(telegram, "555, 424242 555", undefined, allowlist)).toEqual([555, 424242]);
    expect(parseOwners(platformOf("slack"), "U0ALLOWED1", undefined, ["U0ALLOWED1"])).toEqual(["U0ALLOWED1"]);
  });

  it("keeps the saved owners when not given, names nobody with none or by default", () => {
    expect(parseOwners(telegram, undefined, [555], allowlist)).toEqual([555]);
    expect(parseOwners(telegram, "none", [555], allowlist)).toEqual([]);
    expect(parseOwners(telegram, undefined, undefined, allowlist)).toEqual([]);
  });

  it("refuses an owner not on the allowlist, a bad id and an empty list", () => {
    expect(() => parseOwners(telegram, "999", undefined, allowlist)).toThrow(
      "999 is not on the allowlist: an owner must be allowed to talk to the bot too",
    );
    // A saved owner the new allowlist leaves out is refused too, not dropped without a word.
    expect(() => parseOwners(telegram, undefined, [555], [424242])).toThrow("555 is not on the allowlist");
    expect(() => parseOwners(telegram, "@me", undefined, allowlist)).toThrow('"@me" is a username');
    expect(() => parseOwners(telegram, ",", undefined, allowlist)).toThrow("--owner needs the ids");
  });
});
