import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  openDisplay,
  parseDisplayName,
  parseXauthority,
  pickCookie,
  toRgb,
  type X11Error,
  type X11Screen,
  type X11Setup,
} from "./x11.js";

/** One Xauthority entry as libXau writes it: a family, then four length-prefixed fields. */
function xauthEntry(family: number, address: string, number: string, name: string, data: Buffer): Buffer {
  const field = (value: Buffer) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(value.length);
    return Buffer.concat([length, value]);
  };
  const head = Buffer.alloc(2);
  head.writeUInt16BE(family);
  return Buffer.concat([head, ...[address, number, name].map((s) => field(Buffer.from(s))), field(data)]);
}

describe("X display names", () => {
  it("reads host, display and screen, and refuses anything else", () => {
    expect(parseDisplayName(":0")).toEqual({ host: "", display: 0, screen: 0 });
    expect(parseDisplayName(":99.1")).toEqual({ host: "", display: 99, screen: 1 });
    expect(parseDisplayName("localhost:10.0")).toEqual({ host: "localhost", display: 10, screen: 0 });
    expect(parseDisplayName("box/unix:3")).toEqual({ host: "box", display: 3, screen: 0 });
    for (const bad of ["", "0", ":x", "host", ":1;rm", "a b:1"])
      expect(parseDisplayName(bad)).toBeUndefined();
  });
});

describe("the Xauthority cookie", () => {
  const cookie = (byte: number) => Buffer.alloc(16, byte);
  const file = Buffer.concat([
    xauthEntry(256, "otherhost", "0", "MIT-MAGIC-COOKIE-1", cookie(1)),
    xauthEntry(65535, "", "7", "MIT-MAGIC-COOKIE-1", cookie(2)),
    xauthEntry(256, "myhost", "7", "XDM-AUTHORIZATION-1", cookie(3)),
    xauthEntry(256, "myhost", "7", "MIT-MAGIC-COOKIE-1", cookie(4)),
  ]);

  it("parses every entry and picks this host's cookie for the display, then a wildcard", () => {
    expect(parseXauthority(file)).toHaveLength(4);
    expect(pickCookie(parseXauthority(file), 7, "myhost")?.data).toEqual(cookie(4));
    expect(pickCookie(parseXauthority(file), 7, "elsewhere")?.data).toEqual(cookie(2));
    expect(pickCookie(parseXauthority(file), 8, "myhost")).toBeUndefined();
  });

  it("stops at a cut-short file instead of reading past it", () => {
    expect(parseXauthority(file.subarray(0, file.length - 5))).toHaveLength(3);
  });
});

describe("the X11 handshake against a server speaking the protocol on 127.0.0.1", () => {
  const home = mkdtempSync(join(tmpdir(), "spar-x11-"));
  let server: Server | undefined;
  afterAll(() => {
    server?.close();
    rmSync(home, { recursive: true, force: true });
  });

  /** A server on 6000+N that records the setup request and answers Failed with `reason`. */
  async function refusingServer(reason: string): Promise<{ display: number; received: () => Buffer }> {
    let received = Buffer.alloc(0);
    for (let display = 150; display < 400; display += 1) {
      const candidate = createServer((socket) => {
        socket.on("data", (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          const text = Buffer.from(reason);
          const padded = Buffer.concat([text, Buffer.alloc((4 - (text.length % 4)) % 4)]);
          const head = Buffer.alloc(8);
          head.writeUInt8(0, 0);
          head.writeUInt8(text.length, 1);
          head.writeUInt16LE(11, 2);
          head.writeUInt16LE(padded.length / 4, 6);
          socket.end(Buffer.concat([head, padded]));
        });
      });
      const listening = await new Promise<boolean>((done) => {
        candidate.once("error", () => done(false));
        candidate.listen(6000 + display, "127.0.0.1", () => done(true));
      });
      if (listening) {
        server = candidate;
        return { display, received: () => received };
      }
    }
    throw new Error("no free port for the fake X server");
  }

  it("sends the Xauthority cookie and reports the server's refusal as `refused`, with its reason", async () => {
    const fake = await refusingServer("Invalid MIT-MAGIC-COOKIE-1 key");
    const xauthority = join(home, "Xauthority");
    writeFileSync(
      xauthority,
      xauthEntry(65535, "", String(fake.display), "MIT-MAGIC-COOKIE-1", Buffer.alloc(16, 9)),
    );
    const error = (await openDisplay(
      `127.0.0.1:${fake.display}`,
      { XAUTHORITY: xauthority },
      { timeoutMs: 5000 },
    ).catch((e: unknown) => e)) as X11Error;
    expect(error.refusal).toEqual({
      kind: "refused",
      reason: `the X server at 127.0.0.1:${fake.display} refused the connection: Invalid MIT-MAGIC-COOKIE-1 key (check XAUTHORITY)`,
    });
    const request = fake.received();
    expect(request.toString("latin1", 0, 1)).toBe("l");
    expect(request.readUInt16LE(2)).toBe(11);
    expect(request.readUInt16LE(6)).toBe(18);
    expect(request.readUInt16LE(8)).toBe(16);
    expect(request.toString("latin1", 12, 30)).toBe("MIT-MAGIC-COOKIE-1");
    expect(request.subarray(32, 48)).toEqual(Buffer.alloc(16, 9));
  });

  it("reports a display nobody serves as `unreachable`, naming where it looked", async () => {
    const error = (await openDisplay(":4321", {}, { timeoutMs: 5000 }).catch((e: unknown) => e)) as X11Error;
    expect(error.refusal.kind).toBe("unreachable");
    expect(error.refusal.reason).toMatch(
      /^no X server answers at display :4321 \(\/tmp\/\.X11-unix\/X4321: /,
    );
    const bad = (await openDisplay("nonsense", {}, { timeoutMs: 5000 }).catch((e: unknown) => e)) as X11Error;
    expect(bad.refusal.reason).toBe('"nonsense" is not an X display name');
  });
});

describe("ZPixmap pixels to RGB", () => {
  const screen = (visualClass: number, masks: [number, number, number]): X11Screen => ({
    root: 1,
    width: 2,
    height: 2,
    rootVisual: 33,
    rootDepth: 24,
    visuals: new Map([
      [33, { id: 33, visualClass, redMask: masks[0], greenMask: masks[1], blueMask: masks[2] }],
    ]),
  });
  const setup = (depth: number, bitsPerPixel: number, imageByteOrder = 0): X11Setup => ({
    vendor: "test",
    imageByteOrder,
    formats: [{ depth, bitsPerPixel, scanlinePad: 32 }],
    screens: [],
  });

  it("reads 32-bit TrueColor pixels in either byte order", () => {
    const little = Buffer.alloc(16);
    [0xff0000, 0x00ff00, 0x0000ff, 0x123456].forEach((p, i) => {
      little.writeUInt32LE(p, i * 4);
    });
    const big = Buffer.alloc(16);
    [0xff0000, 0x00ff00, 0x0000ff, 0x123456].forEach((p, i) => {
      big.writeUInt32BE(p, i * 4);
    });
    const want = [255, 0, 0, 0, 255, 0, 0, 0, 255, 0x12, 0x34, 0x56];
    const tc = screen(4, [0xff0000, 0xff00, 0xff]);
    expect([
      ...(toRgb({ depth: 24, visual: 33, data: little }, setup(24, 32), tc) as { rgb: Buffer }).rgb,
    ]).toEqual(want);
    expect([
      ...(toRgb({ depth: 24, visual: 33, data: big }, setup(24, 32, 1), tc) as { rgb: Buffer }).rgb,
    ]).toEqual(want);
  });

  it("scales 16-bit (5-6-5) pixels to full 8-bit range, rows padded to 32 bits", () => {
    const data = Buffer.alloc(8); // 2 pixels of 2 bytes = 4 bytes a row, already on the 32-bit pad
    data.writeUInt16LE(0xf800, 0); // red at full
    data.writeUInt16LE(0x07e0, 2); // green at full
    data.writeUInt16LE(0x001f, 4); // blue at full
    data.writeUInt16LE(0x0000, 6);
    const tc = screen(4, [0xf800, 0x07e0, 0x001f]);
    const out = toRgb({ depth: 16, visual: 33, data }, setup(16, 16), tc) as { rgb: Buffer };
    expect([...out.rgb]).toEqual([255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0]);
  });

  it("says why it cannot read a colormap-indexed (PseudoColor) picture, so the caller falls back", () => {
    const out = toRgb({ depth: 8, visual: 33, data: Buffer.alloc(16) }, setup(8, 8), screen(3, [0, 0, 0]));
    expect(out).toEqual({
      unsupported: "its root window is a PseudoColor visual at depth 8, 8 bits per pixel",
    });
  });
});
