import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { isSparError, validatorFor } from "../../kernel/sdk.js";
import {
  type AddressKind,
  classifyIp,
  formatIp,
  hostLiteral,
  inCidr,
  parseCidr,
  parseIp,
} from "./address.js";
import {
  addressRefusal,
  grantedHosts,
  hostKey,
  hostMatches,
  isMetadataName,
  parseAllowPrivate,
  parseHostPattern,
} from "./policy.js";

/** The kind of the address a URL's host names, as web_fetch sees it (the URL parser first). */
function kindOfUrl(url: string): AddressKind | "name" {
  const ip = hostLiteral(new URL(url).hostname);
  return ip ? classifyIp(ip) : "name";
}

describe("parsing addresses", () => {
  it("reads dotted quads and every IPv6 spelling, and nothing else", () => {
    expect(parseIp("127.0.0.1")?.bytes).toEqual(Uint8Array.from([127, 0, 0, 1]));
    expect(formatIp(parseIp("0:0:0:0:0:0:0:1") as never)).toBe("::1");
    expect(formatIp(parseIp("[::FFFF:127.0.0.1]") as never)).toBe("::ffff:7f00:1");
    expect(formatIp(parseIp("fe80::1%eth0") as never)).toBe("fe80::1");
    expect(formatIp(parseIp("2001:db8::8:800:200c:417a") as never)).toBe("2001:db8::8:800:200c:417a");
    for (const bad of ["", "localhost", "127.1", "0x7f.0.0.1", "256.0.0.1", "1::2::3", "::g"]) {
      expect(parseIp(bad)).toBeUndefined();
    }
  });

  it("reads the odd IPv4 spellings through the URL parser: decimal, octal, hex, short, fullwidth", () => {
    const loopback = [
      "2130706433",
      "0177.0.0.1",
      "0x7f.1",
      "0x7f.0x0.0x0.0x1",
      "0x7F000001",
      "017700000001",
      "127.1",
      "127.0.1",
      "127.000.000.001",
      "127.0.0.1.",
      "１２７.０.０.１",
    ];
    for (const host of loopback) expect(formatIp(hostLiteral(host) as never), host).toBe("127.0.0.1");
    expect(formatIp(hostLiteral("0") as never)).toBe("0.0.0.0");
    expect(formatIp(hostLiteral("10.1") as never)).toBe("10.0.0.1");
    expect(formatIp(hostLiteral("::ffff:7f00:1") as never)).toBe("::ffff:7f00:1");
    for (const name of ["localhost", "example.com", "127.0.0.1.example", "127.0.0.1/x", "a@127.0.0.1"]) {
      expect(hostLiteral(name), name).toBeUndefined();
    }
  });

  it("reads CIDR ranges, single addresses, and IPv4-mapped ranges as IPv4", () => {
    const range = parseCidr("192.168.1.0/24");
    expect(range).toBeDefined();
    expect(inCidr(parseIp("192.168.1.77") as never, range as never)).toBe(true);
    expect(inCidr(parseIp("192.168.2.1") as never, range as never)).toBe(false);
    expect(parseCidr("10.0.0.5")?.prefix).toBe(32);
    expect(parseCidr("fd00::/8")?.prefix).toBe(8);
    expect(parseCidr("::ffff:10.0.0.0/104")).toMatchObject({ ip: { family: 4 }, prefix: 8 });
    expect(parseCidr("10.0.0.0/33")).toBeUndefined();
    expect(parseCidr("10.0.0.0/x")).toBeUndefined();
    expect(parseCidr("intranet/8")).toBeUndefined();
    // Different families never match.
    expect(inCidr(parseIp("::1") as never, parseCidr("0.0.0.0/0") as never)).toBe(false);
  });
});

describe("classifying addresses", () => {
  const cases: [string, AddressKind | "name"][] = [
    ["http://127.0.0.1/", "loopback"],
    ["http://127.8.9.10/", "loopback"],
    ["http://2130706433/", "loopback"],
    ["http://0177.0.0.1/", "loopback"],
    ["http://0x7f.1/", "loopback"],
    ["http://127.1/", "loopback"],
    ["http://[::1]/", "loopback"],
    ["http://[0:0:0:0:0:0:0:1]/", "loopback"],
    ["http://[::ffff:127.0.0.1]/", "loopback"],
    ["http://[::ffff:7f00:1]/", "loopback"],
    ["http://[64:ff9b::127.0.0.1]/", "loopback"],
    ["http://[2002:7f00:1::]/", "loopback"],
    ["http://10.0.0.1/", "private"],
    ["http://10.255.255.255/", "private"],
    ["http://172.16.0.1/", "private"],
    ["http://172.31.255.255/", "private"],
    ["http://192.168.1.1/", "private"],
    ["http://3232235777/", "private"],
    ["http://[::ffff:192.168.1.1]/", "private"],
    ["http://[64:ff9b:1::a00:1]/", "private"],
    ["http://100.64.0.1/", "shared"],
    ["http://100.127.255.255/", "shared"],
    ["http://169.254.1.1/", "link-local"],
    ["http://[fe80::1]/", "link-local"],
    ["http://[febf::1]/", "link-local"],
    ["http://[fc00::1]/", "unique-local"],
    ["http://[fdff::1]/", "unique-local"],
    ["http://[fec0::1]/", "site-local"],
    ["http://224.0.0.1/", "multicast"],
    ["http://239.255.255.250/", "multicast"],
    ["http://[ff02::1]/", "multicast"],
    ["http://0.0.0.0/", "unspecified"],
    ["http://0/", "unspecified"],
    ["http://0.1.2.3/", "unspecified"],
    ["http://[::]/", "unspecified"],
    ["http://[::ffff:0.0.0.0]/", "unspecified"],
    ["http://255.255.255.255/", "reserved"],
    ["http://240.0.0.1/", "reserved"],
    ["http://192.0.0.8/", "reserved"],
    ["http://192.88.99.1/", "reserved"],
    ["http://[::127.0.0.1]/", "reserved"],
    ["http://[100::1]/", "reserved"],
    ["http://[2001::1]/", "reserved"],
    ["http://[2001:2::1]/", "reserved"],
    ["http://[5f00::1]/", "reserved"],
    ["http://[4000::1]/", "reserved"],
    ["http://192.0.2.1/", "documentation"],
    ["http://198.51.100.1/", "documentation"],
    ["http://203.0.113.1/", "documentation"],
    ["http://[2001:db8::1]/", "documentation"],
    ["http://[3fff::1]/", "documentation"],
    ["http://198.18.0.1/", "benchmarking"],
    ["http://198.19.255.255/", "benchmarking"],
    ["http://169.254.169.254/", "metadata"],
    ["http://2852039166/", "metadata"],
    ["http://0xa9.0xfe.0xa9.0xfe/", "metadata"],
    ["http://[::ffff:169.254.169.254]/", "metadata"],
    ["http://[::ffff:a9fe:a9fe]/", "metadata"],
    ["http://169.254.170.2/", "metadata"],
    ["http://100.100.100.200/", "metadata"],
    ["http://[fd00:ec2::254]/", "metadata"],
    ["http://[64:ff9b::169.254.169.254]/", "metadata"],
    ["http://8.8.8.8/", "public"],
    ["http://1.1.1.1/", "public"],
    ["http://172.32.0.1/", "public"],
    ["http://100.128.0.1/", "public"],
    ["http://[2606:4700:4700::1111]/", "public"],
    ["http://[::ffff:8.8.8.8]/", "public"],
    ["http://[64:ff9b::8.8.8.8]/", "public"],
    ["http://[2002:808:808::]/", "public"],
    ["http://localhost/", "name"],
    ["http://example.com/", "name"],
  ];
  it.each(cases)("%s is %s", (url, kind) => {
    expect(kindOfUrl(url)).toBe(kind);
  });
});

describe("the address rules", () => {
  const ip = (text: string) => hostLiteral(text) as NonNullable<ReturnType<typeof hostLiteral>>;
  const none = parseAllowPrivate([]);

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
    const allow = parseAllowPrivate([
      "10.0.0.5",
      "192.168.1.0/24",
      "intranet.local",
      "*.corp.example",
      "fd00::/8",
    ]);
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
    const wide = parseAllowPrivate(["0.0.0.0/0", "::/0", "localhost", "intranet.local"]);
    expect(addressRefusal("localhost", ip("127.0.0.1"), wide, 80)).toMatch(
      /only a loopback address listed itself/,
    );
    expect(addressRefusal("intranet.local", ip("127.0.0.1"), wide, 80)).toBeDefined();
    expect(addressRefusal("::1", ip("::1"), wide, 80)).toBeDefined();
    // The wide ranges still open private addresses: that is what the operator listed.
    expect(addressRefusal("10.1.2.3", ip("10.1.2.3"), wide, 80)).toBeUndefined();
    const one = parseAllowPrivate(["127.0.0.2", "::1"]);
    expect(addressRefusal("127.0.0.2", ip("127.0.0.2"), one, 80)).toBeUndefined();
    expect(addressRefusal("x", ip("::ffff:127.0.0.2"), one, 80)).toBeUndefined();
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), one, 80)).toBeDefined();
    expect(addressRefusal("::1", ip("::1"), one, 80)).toBeUndefined();
    // A translated form of a listed loopback address is still refused: it is not the listed address.
    expect(addressRefusal("x", ip("64:ff9b::7f00:2"), one, 80)).toBeDefined();
    expect(
      addressRefusal("127.3.3.3", ip("127.3.3.3"), parseAllowPrivate(["127.0.0.0/8"]), 80),
    ).toBeUndefined();
  });

  it("opens an entry with a port on that port only, loopback included", () => {
    const allow = parseAllowPrivate([
      "127.0.0.1:8080",
      "[::1]:8443",
      "10.0.0.0/8:3000",
      "intranet.local:8000",
      "*.corp.example:443",
      "192.168.1.5",
      "192.168.1.5:9000",
    ]);
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), allow, 8080)).toBeUndefined();
    expect(addressRefusal("127.0.0.1", ip("127.0.0.1"), allow, 8081)).toBe(
      "127.0.0.1 is a loopback address ([moves.web] allow_private allows it on port 8080 only, not 8081)",
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
    const named = parseAllowPrivate(["localhost:8080"]);
    expect(addressRefusal("localhost", ip("127.0.0.1"), named, 8080)).toMatch(/listed itself/);
  });

  it("never opens metadata, unspecified, multicast or reserved addresses", () => {
    const everything = parseAllowPrivate([
      "0.0.0.0/0",
      "::/0",
      "169.254.169.254",
      "0.0.0.0",
      "metadata.google.internal",
    ]);
    for (const never of [
      "169.254.169.254",
      "fd00:ec2::254",
      "0.0.0.0",
      "::",
      "224.0.0.1",
      "255.255.255.255",
    ]) {
      expect(addressRefusal(never, ip(never), everything, 80), never).toMatch(/never connects to/);
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
        parseAllowPrivate([bad]);
      } catch (err) {
        error = err;
      }
      expect(isSparError(error, "CONFIG_INVALID"), bad).toBe(true);
      expect((error as Error).message).toContain(JSON.stringify(bad));
    }
  });
});

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
      expect(() => parseAllowPrivate([good]), good).not.toThrow();
    }
  });

  it("stops the common mistakes before the daemon starts", () => {
    for (const bad of ["http://x/", "a b", "intranet/8", "user@host", "*.", "*", "[::1]:", "host:", "x/y/z"])
      expect(entry(bad), bad).toBe(false);
  });

  it("leaves to parseAllowPrivate what only the parser can tell (the README says so)", () => {
    for (const subtle of ["999.1.1.1", "10.0.0.0/40"]) {
      expect(entry(subtle), subtle).toBe(true);
      expect(() => parseAllowPrivate([subtle]), subtle).toThrow(/is not an IP address/);
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

  it("reads the grants' hosts: none anywhere means any host; otherwise their union", () => {
    expect(grantedHosts([{ type: "network" }])).toBeUndefined();
    expect(grantedHosts([{ type: "network", hosts: "a.example" }, { type: "full_access" }])).toBeUndefined();
    const both = grantedHosts([
      { type: "network", hosts: "a.example" },
      { type: "network", hosts: ["*.b.example", "not a host"] },
    ]);
    expect(both?.listed).toEqual(["a.example", "*.b.example", "not a host"]);
    expect(both?.patterns).toEqual([{ exact: "a.example" }, { suffix: ".b.example" }]);
    expect(grantedHosts([{ type: "network", hosts: [] }])?.patterns).toEqual([]);
  });
});
