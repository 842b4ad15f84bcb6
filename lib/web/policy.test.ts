import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/errors.js";
import { hostLiteral } from "./address.js";
import {
  type AllowSetting,
  addressRefusal,
  hostKey,
  hostMatches,
  isMetadataName,
  parseAllowPrivate,
  parseHostPattern,
} from "./policy.js";

/** Refusals name the setting and the fetcher they were given. */
const TEST_ALLOW: AllowSetting = {
  name: "[test] allow_private",
  path: "test.allow_private",
  who: "the tester",
};

describe("the address rules", () => {
  const ip = (text: string) => hostLiteral(text) as NonNullable<ReturnType<typeof hostLiteral>>;
  const none = parseAllowPrivate([], TEST_ALLOW);

  it("lets public addresses through and refuses the rest by default, saying what they are", () => {
    expect(addressRefusal("example.com", ip("93.184.216.34"), none, 80)).toBeUndefined();
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), none, 80)).toMatch(
      /127\.0\.0\.1 is a loopback address/,
    );
    expect(addressRefusal("intranet", ip("10.0.0.5"), none, 80)).toMatch(
      /10\.0\.0\.5 is a private address.*allow_private/,
    );
    expect(addressRefusal("x", ip("::ffff:7f00:1"), none, 80)).toMatch(/loopback/);
  });

  it("opens private addresses to listed ranges, addresses and names only", () => {
    const allow = parseAllowPrivate(
      ["10.0.0.5", "192.168.1.0/24", "intranet.local", "*.corp.example", "fd00::/8"],
      TEST_ALLOW,
    );
    expect(addressRefusal("10.0.0.5", ip("10.0.0.5"), allow, 80)).toBeUndefined();
    expect(addressRefusal("10.0.0.6", ip("10.0.0.6"), allow, 80)).toBeDefined();
    expect(addressRefusal("192.168.1.200", ip("192.168.1.200"), allow, 80)).toBeUndefined();
    expect(addressRefusal("x", ip("::ffff:192.168.1.9"), allow, 80)).toBeUndefined();
    expect(addressRefusal("192.168.2.1", ip("192.168.2.1"), allow, 80)).toBeDefined();
    expect(addressRefusal("intranet.local", ip("10.9.9.9"), allow, 80)).toBeUndefined();
    expect(addressRefusal("wiki.corp.example", ip("172.20.0.1"), allow, 80)).toBeUndefined();
    expect(addressRefusal("corp.example", ip("172.20.0.1"), allow, 80)).toBeDefined();
    expect(addressRefusal("other.local", ip("10.9.9.9"), allow, 80)).toBeDefined();
    expect(addressRefusal("v6", ip("fd12::1"), allow, 80)).toBeUndefined();
  });

  it("opens loopback only to a loopback address or range listed as such", () => {
    const wide = parseAllowPrivate(["0.0.0.0/0", "::/0", "localhost", "intranet.local"], TEST_ALLOW);
    expect(addressRefusal("localhost", ip("127.0.0.1"), wide, 80)).toMatch(
      /only a loopback address listed itself/,
    );
    expect(addressRefusal("intranet.local", ip("127.0.0.1"), wide, 80)).toBeDefined();
    expect(addressRefusal("::1", ip("::1"), wide, 80)).toBeDefined();
    // The wide ranges still open private addresses: that is what the operator listed.
    expect(addressRefusal("10.1.2.3", ip("10.1.2.3"), wide, 80)).toBeUndefined();
    const one = parseAllowPrivate(["127.0.0.2", "::1"], TEST_ALLOW);
    expect(addressRefusal("127.0.0.2", ip("127.0.0.2"), one, 80)).toBeUndefined();
    expect(addressRefusal("x", ip("::ffff:127.0.0.2"), one, 80)).toBeUndefined();
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), one, 80)).toBeDefined();
    expect(addressRefusal("::1", ip("::1"), one, 80)).toBeUndefined();
    // A translated form of a listed loopback address is still refused: it is not the listed address.
    expect(addressRefusal("x", ip("64:ff9b::7f00:2"), one, 80)).toBeDefined();
    expect(
      addressRefusal("127.3.3.3", ip("127.3.3.3"), parseAllowPrivate(["127.0.0.0/8"], TEST_ALLOW), 80),
    ).toBeUndefined();
  });

  it("opens an entry with a port on that port only, loopback included", () => {
    const allow = parseAllowPrivate(
      [
        "127.0.0.1:8080",
        "[::1]:8443",
        "10.0.0.0/8:3000",
        "intranet.local:8000",
        "*.corp.example:443",
        "192.168.1.5",
        "192.168.1.5:9000",
      ],
      TEST_ALLOW,
    );
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), allow, 8080)).toBeUndefined();
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), allow, 8081)).toBe(
      "127.0.0.1 is a loopback address ([test] allow_private allows it on port 8080 only, not 8081)",
    );
    expect(addressRefusal("x", ip("::ffff:127.0.0.1"), allow, 8080)).toBeUndefined();
    expect(addressRefusal("127.0.0.2", ip("127.0.0.2"), allow, 8080)).toMatch(/listed itself/);
    expect(addressRefusal("::1", ip("::1"), allow, 8443)).toBeUndefined();
    expect(addressRefusal("::1", ip("::1"), allow, 80)).toMatch(/on port 8443 only, not 80/);
    expect(addressRefusal("10.2.3.4", ip("10.2.3.4"), allow, 3000)).toBeUndefined();
    expect(addressRefusal("10.2.3.4", ip("10.2.3.4"), allow, 3001)).toMatch(/port 3000 only/);
    expect(addressRefusal("intranet.local", ip("172.16.0.9"), allow, 8000)).toBeUndefined();
    expect(addressRefusal("intranet.local", ip("172.16.0.9"), allow, 80)).toMatch(/port 8000 only/);
    expect(addressRefusal("wiki.corp.example", ip("172.16.0.9"), allow, 443)).toBeUndefined();
    expect(addressRefusal("wiki.corp.example", ip("172.16.0.9"), allow, 80)).toBeDefined();
    // An entry without a port beside one with a port: every port.
    expect(addressRefusal("192.168.1.5", ip("192.168.1.5"), allow, 1234)).toBeUndefined();
    // A name with a port still never opens loopback.
    const named = parseAllowPrivate(["localhost:8080"], TEST_ALLOW);
    expect(addressRefusal("localhost", ip("127.0.0.1"), named, 8080)).toMatch(/listed itself/);
  });

  it("never opens metadata, unspecified, multicast or reserved addresses", () => {
    const everything = parseAllowPrivate(
      ["0.0.0.0/0", "::/0", "169.254.169.254", "0.0.0.0", "metadata.google.internal"],
      TEST_ALLOW,
    );
    for (const never of [
      "169.254.169.254",
      "fd00:ec2::254",
      "0.0.0.0",
      "::",
      "224.0.0.1",
      "255.255.255.255",
    ]) {
      expect(addressRefusal(never, ip(never), everything, 80), never).toMatch(
        /which the tester never connects to/,
      );
    }
    expect(addressRefusal("metadata.google.internal", ip("169.254.169.254"), everything, 80)).toMatch(
      /metadata/,
    );
  });

  it("refuses a bad allow_private entry at start-up, naming it", () => {
    for (const bad of [
      "10.0.0.0/99",
      "not a host",
      "intranet/8",
      "http://x/",
      "",
      "127.0.0.1:0",
      "127.0.0.1:65536",
      "127.0.0.1:http",
      "::1:8080:x",
      "[::1]:",
    ]) {
      let error: unknown;
      try {
        parseAllowPrivate([bad], TEST_ALLOW);
      } catch (err) {
        error = err;
      }
      expect(isSparError(error, "CONFIG_INVALID"), bad).toBe(true);
      expect((error as Error).message).toContain(`[test] allow_private: ${JSON.stringify(bad)}`);
      expect((error as { extra: object }).extra).toEqual({ path: "test.allow_private" });
    }
  });
});

describe("host names", () => {
  it("compares hosts lowercase, without brackets or a trailing dot, IPs in their usual spelling", () => {
    expect(hostKey("Example.COM.")).toBe("example.com");
    expect(hostKey("[::1]")).toBe("::1");
    expect(hostKey("[::ffff:7f00:1]")).toBe("127.0.0.1");
  });

  it("matches exact names and *.wildcards (subdomains only)", () => {
    const wild = parseHostPattern("*.Example.com") as never;
    expect(hostMatches("a.example.com", wild)).toBe(true);
    expect(hostMatches("a.b.example.com", wild)).toBe(true);
    expect(hostMatches("example.com", wild)).toBe(false);
    expect(hostMatches("badexample.com", wild)).toBe(false);
    const exact = parseHostPattern("docs.example.com") as never;
    expect(hostMatches("docs.example.com", exact)).toBe(true);
    expect(hostMatches("x.docs.example.com", exact)).toBe(false);
    expect(hostMatches("127.0.0.1", parseHostPattern("0x7f.1") as never)).toBe(true);
    expect(hostMatches("xn--bcher-kva.example", parseHostPattern("bücher.example") as never)).toBe(true);
    for (const bad of ["", "a b", "http://x", "x/y", "user@host", "*."])
      expect(parseHostPattern(bad), bad).toBeUndefined();
  });

  it("reads a port after a name or an address, IPv6 in brackets, and then matches that port only", () => {
    expect(parseHostPattern("docs.example.com:8443")).toEqual({ exact: "docs.example.com", port: 8443 });
    expect(parseHostPattern("*.example.com:80")).toEqual({ suffix: ".example.com", port: 80 });
    expect(parseHostPattern("[::1]:8080")).toEqual({ exact: "::1", port: 8080 });
    expect(parseHostPattern("0x7f.1:81")).toEqual({ exact: "127.0.0.1", port: 81 });
    // Without brackets an IPv6 address has no port: its last group is part of it.
    expect(parseHostPattern("fe80::1:80")).toEqual({ exact: "fe80::1:80" });
    for (const bad of ["example.com:0", "example.com:70000", "example.com:", "[::1]", "[::1]:x"])
      expect(parseHostPattern(bad), bad).toEqual(bad === "[::1]" ? { exact: "::1" } : undefined);
    const pattern = parseHostPattern("docs.example.com:8443") as never;
    expect(hostMatches("docs.example.com", pattern, 8443)).toBe(true);
    expect(hostMatches("docs.example.com", pattern, 443)).toBe(false);
    expect(hostMatches("docs.example.com", pattern)).toBe(false);
    expect(hostMatches("docs.example.com", parseHostPattern("docs.example.com") as never, 1)).toBe(true);
  });

  it("knows the metadata services by name", () => {
    for (const name of [
      "metadata.google.internal",
      "metadata.goog",
      "metadata",
      "instance-data",
      "x.metadata.google.internal",
    ]) {
      expect(isMetadataName(name), name).toBe(true);
    }
    expect(isMetadataName("metadata.example.com")).toBe(false);
  });
});
