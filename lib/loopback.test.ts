import { describe, expect, it } from "vitest";
import { isLoopbackAddress, isLoopbackHost, isLoopbackHostHeader, parseHostHeader } from "./loopback.js";

describe("loopback", () => {
  it.each(["127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"])(
    "%s is a loopback peer",
    (a) => {
      expect(isLoopbackAddress(a)).toBe(true);
    },
  );

  it.each(["127.999.0.1", "127.0.0", "10.0.0.1", "::2", "::ffff:10.0.0.1", "localhost", ""])(
    "%s is not a loopback peer",
    (a) => {
      expect(isLoopbackAddress(a)).toBe(false);
    },
  );

  it.each(["localhost", "LOCALHOST", "127.0.0.1", "[::1]", "::1"])("%s is a loopback host", (h) => {
    expect(isLoopbackHost(h)).toBe(true);
  });

  it.each(["localhost:6660", "127.0.0.1:6660", "[::1]:6660", "[::1]", "localhost", "127.0.0.2"])(
    "Host %s names this machine",
    (h) => {
      expect(isLoopbackHostHeader(h)).toBe(true);
    },
  );

  it.each([
    "[::1].attacker.example",
    "[::1]attacker",
    "127.0.0.1:evil",
    "localhost:foo@evil.example",
    "127.999.0.1",
    "localhost.",
    "localhost:0",
    "localhost:70000",
    "127.0.0.1:6660:1",
    "evil.example",
    "localhost.evil.example",
    " localhost",
    "user@localhost",
    "localhost/path",
    "",
  ])("Host %j does not", (h) => {
    expect(isLoopbackHostHeader(h)).toBe(false);
  });

  it("parses a port", () => {
    expect(parseHostHeader("[::1]:6660")).toEqual({ host: "::1", port: 6660 });
    expect(parseHostHeader("example.com")).toEqual({ host: "example.com" });
  });
});
