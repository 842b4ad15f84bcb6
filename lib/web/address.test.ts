import { describe, expect, it } from "vitest";
import {
  type AddressKind,
  classifyIp,
  formatIp,
  hostLiteral,
  inCidr,
  parseCidr,
  parseIp,
} from "./address.js";

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
