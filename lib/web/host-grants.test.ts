import { describe, expect, it } from "vitest";
import { grantHosts, hostAllowed, hostEntries, invalidHostEntries, parseGrantHost } from "./host-grants.js";
import { hostKey } from "./policy.js";

/** Whether a fighter holding exactly `hosts` may reach `host` on `port`. */
function allows(hosts: string | string[], host: string, port = 443): boolean {
  const allowlist = grantHosts([{ type: "network", hosts }]);
  return allowlist === undefined || hostAllowed(allowlist, hostKey(host), port);
}

describe("a network grant's hosts (one reading for web_fetch and the sandbox's egress)", () => {
  it("reads `*` as any host on any port, and `*:port` as any host on that port", () => {
    expect(grantHosts([{ type: "network", hosts: "*" }])).toBeUndefined();
    expect(grantHosts([{ type: "network", hosts: ["example.org", " * "] }])).toBeUndefined();
    expect(allows("*", "example.com", 8080)).toBe(true);
    expect(allows("*", "10.0.0.1", 80)).toBe(true);
    expect(allows("*:8443", "anything.example", 8443)).toBe(true);
    expect(allows("*:8443", "anything.example", 443)).toBe(false);
  });

  it("reads a name as that name exactly, any case, with or without a trailing dot", () => {
    expect(allows("example.com", "example.com")).toBe(true);
    expect(allows("Example.COM", "EXAMPLE.com.")).toBe(true);
    expect(allows("example.com", "www.example.com")).toBe(false);
    expect(allows("example.com", "badexample.com")).toBe(false);
  });

  it("reads `*.example.com` as every name under it at any depth, but not example.com itself", () => {
    expect(allows("*.example.com", "www.example.com")).toBe(true);
    expect(allows("*.example.com", "a.b.example.com")).toBe(true);
    expect(allows("*.example.com", "example.com")).toBe(false);
    expect(allows("*.example.com", "notexample.com")).toBe(false);
    expect(allows(["example.com", "*.example.com"], "example.com")).toBe(true);
  });

  it("reads `:port` as that port only, and no port as every port", () => {
    expect(allows("example.com:8443", "example.com", 8443)).toBe(true);
    expect(allows("example.com:8443", "example.com", 443)).toBe(false);
    expect(allows("*.example.com:8443", "api.example.com", 8443)).toBe(true);
    expect(allows("*.example.com:8443", "api.example.com", 80)).toBe(false);
    expect(allows("example.com", "example.com", 80)).toBe(true);
    expect(allows("example.com", "example.com", 8080)).toBe(true);
  });

  it("reads IP addresses, IPv6 in brackets with a port", () => {
    expect(allows("93.184.216.34", "93.184.216.34")).toBe(true);
    expect(allows("[2606:2800::1]:8080", "2606:2800:0:0:0:0:0:1", 8080)).toBe(true);
    expect(allows("[2606:2800::1]:8080", "2606:2800::1", 80)).toBe(false);
  });

  it("takes a list, or a string of entries separated by commas or spaces", () => {
    expect(hostEntries("a.example, b.example  c.example,,")).toEqual(["a.example", "b.example", "c.example"]);
    expect(hostEntries([" a.example ", "", "b.example"])).toEqual(["a.example", "b.example"]);
    expect(allows("a.example,b.example", "b.example")).toBe(true);
    expect(allows(["a.example", "b.example"], "b.example")).toBe(true);
    expect(allows("a.example,b.example", "c.example")).toBe(false);
  });

  it("allows any host for a grant without hosts or full_access; none for an empty list", () => {
    expect(grantHosts([{ type: "network" }])).toBeUndefined();
    expect(grantHosts([{ type: "network", hosts: "a.example" }, { type: "full_access" }])).toBeUndefined();
    expect(grantHosts([{ type: "network", hosts: [] }])?.patterns).toEqual([]);
    expect(allows([], "a.example")).toBe(false);
  });

  it("joins several grants, keeps the entries as written for refusals, and matches nothing with a bad entry", () => {
    const both = grantHosts([
      { type: "network", hosts: "a.example" },
      { type: "network", hosts: ["*.b.example", "not a host"] },
    ]);
    expect(both?.listed).toEqual(["a.example", "*.b.example", "not a host"]);
    expect(both?.patterns).toEqual([{ exact: "a.example" }, { suffix: ".b.example" }]);
    expect(invalidHostEntries(["a.example", "not a host", "*.", "http://x.example/", "a.example:0"])).toEqual(
      ["not a host", "*.", "http://x.example/", "a.example:0"],
    );
    expect(invalidHostEntries("*, *.a.example:8443, [::1]:80, 10.0.0.1")).toEqual([]);
  });

  it("parses each form", () => {
    expect(parseGrantHost("*")).toEqual({ any: true });
    expect(parseGrantHost("*:8443")).toEqual({ any: true, port: 8443 });
    expect(parseGrantHost("*.Example.com:8443")).toEqual({ suffix: ".example.com", port: 8443 });
    expect(parseGrantHost("example.com")).toEqual({ exact: "example.com" });
    expect(parseGrantHost("*example.com")).toBeUndefined();
  });
});
