import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { validatorFor } from "../../sdk/index.js";
import { addressRefusal, hostLiteral, parseAllowPrivate } from "../../sdk/kits/web.js";
import { WEB_ALLOW } from "./policy.js";
import { webSettings } from "./settings.js";

describe("the allow_private schema in plugin.json", () => {
  // The kernel checks config.toml against it at start; parseAllowPrivate runs only on activation.
  const manifest = JSON.parse(readFileSync(new URL("./plugin.json", import.meta.url), "utf8"));
  const entry = validatorFor(manifest.sections["moves.web"].properties.allow_private.items);

  it("lets every entry parseAllowPrivate reads through", () => {
    for (const good of [
      "10.0.0.5",
      "192.168.1.0/24",
      "10.0.0.0/8:3000",
      "intranet.local",
      "*.corp.example",
      "intranet.local:8443",
      "127.0.0.1:8080",
      "[::1]:8080",
      "::1",
      "fd00::/8",
      "::ffff:10.0.0.0/104",
      "0x7f.1",
      "bücher.example",
    ]) {
      expect(entry(good), good).toBe(true);
      expect(() => parseAllowPrivate([good], WEB_ALLOW), good).not.toThrow();
    }
  });

  it("stops the common mistakes before the daemon starts", () => {
    for (const bad of ["http://x/", "a b", "intranet/8", "user@host", "*.", "*", "[::1]:", "host:", "x/y/z"])
      expect(entry(bad), bad).toBe(false);
  });

  it("leaves to parseAllowPrivate what only the parser can tell (the README says so)", () => {
    for (const subtle of ["999.1.1.1", "10.0.0.0/40"]) {
      expect(entry(subtle), subtle).toBe(true);
      expect(() => parseAllowPrivate([subtle], WEB_ALLOW), subtle).toThrow(/is not an IP address/);
    }
  });
});

describe("web_fetch's words", () => {
  it("names [moves.web] allow_private and web_fetch in every refusal", () => {
    const ip = (text: string) => hostLiteral(text) as NonNullable<ReturnType<typeof hostLiteral>>;
    const { allow } = webSettings({ allow_private: ["127.0.0.1:8080"] });
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), allow, 8081)).toBe(
      "127.0.0.1 is a loopback address ([moves.web] allow_private allows it on port 8080 only, not 8081)",
    );
    expect(addressRefusal("10.0.0.1", ip("10.0.0.1"), allow, 80)).toBe(
      "10.0.0.1 is a private address (the operator can allow it in [moves.web] allow_private)",
    );
    expect(addressRefusal("x", ip("169.254.169.254"), allow, 80)).toBe(
      "169.254.169.254 is a cloud metadata address, which web_fetch never connects to",
    );
    expect(() => webSettings({ allow_private: ["a b"] })).toThrow(
      /^\[moves\.web\] allow_private: "a b" is not an IP address/,
    );
  });
});
