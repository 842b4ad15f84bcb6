import { describe, expect, it } from "vitest";
import { withDefaults } from "./settings.js";

describe("withDefaults", () => {
  const dir = import.meta.dirname;

  it("gives the defaults of plugin.json when config.toml has no [moves.shell]", () => {
    expect(withDefaults(dir, undefined)).toEqual({
      timeout_s: 60,
      max_output_bytes: 65536,
      path: "/usr/local/bin:/usr/bin:/bin",
    });
    expect(withDefaults(dir, {})).toEqual(withDefaults(dir, undefined));
  });

  it("keeps what the table sets", () => {
    expect(withDefaults(dir, { timeout_s: 5, path: "/opt/bin" })).toEqual({
      timeout_s: 5,
      max_output_bytes: 65536,
      path: "/opt/bin",
    });
  });
});
