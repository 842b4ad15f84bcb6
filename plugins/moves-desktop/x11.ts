import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";

/**
 * Just enough of the X11 wire protocol to answer "is this display reachable, and may we use it?"
 * (the connection handshake, with an MIT-MAGIC-COOKIE-1 from the Xauthority file) and to take a
 * screenshot in-process (one GetImage of the root window). Nothing else: typing and clicking go
 * through xdotool. Spoken little-endian ('l'); the image's own byte order comes from the server.
 */

/** `[host]:display[.screen]`, as in DISPLAY. An empty host (or `unix`) is the local socket. */
export interface DisplayName {
  host: string;
  display: number;
  screen: number;
}

export function parseDisplayName(name: string): DisplayName | undefined {
  const match = /^([A-Za-z0-9._-]*)(?:\/unix)?:(\d{1,5})(?:\.(\d{1,3}))?$/.exec(name);
  if (!match) return undefined;
  return { host: match[1] ?? "", display: Number(match[2]), screen: Number(match[3] ?? 0) };
}

export interface Visual {
  id: number;
  /** 4 = TrueColor; 3 = PseudoColor (a colormap index per pixel), and others. */
  visualClass: number;
  redMask: number;
  greenMask: number;
  blueMask: number;
}

export interface X11Screen {
  root: number;
  width: number;
  height: number;
  rootVisual: number;
  rootDepth: number;
  visuals: Map<number, Visual>;
}

export interface X11Setup {
  vendor: string;
  /** 0: least significant byte first; 1: most significant first. */
  imageByteOrder: number;
  formats: { depth: number; bitsPerPixel: number; scanlinePad: number }[];
  screens: X11Screen[];
}

/** Why a display could not be used: nobody there, or the server said no (authorization). */
export type X11Refusal = { kind: "unreachable" | "refused" | "protocol"; reason: string };

export class X11Error extends Error {
  constructor(readonly refusal: X11Refusal) {
    super(refusal.reason);
  }
}

interface XAuthEntry {
  family: number;
  address: string;
  number: string;
  name: string;
  data: Buffer;
}

const FAMILY_LOCAL = 256;
const FAMILY_WILD = 65535;
const COOKIE = "MIT-MAGIC-COOKIE-1";

/** The entries of an Xauthority file (big-endian lengths, as libXau writes them). */
export function parseXauthority(file: Buffer): XAuthEntry[] {
  const entries: XAuthEntry[] = [];
  let at = 0;
  const field = (): Buffer | undefined => {
    if (at + 2 > file.length) return undefined;
    const length = file.readUInt16BE(at);
    if (at + 2 + length > file.length) return undefined;
    const value = file.subarray(at + 2, at + 2 + length);
    at += 2 + length;
    return value;
  };
  while (at + 2 <= file.length) {
    const family = file.readUInt16BE(at);
    at += 2;
    const [address, number, name, data] = [field(), field(), field(), field()];
    if (!address || !number || !name || !data) break;
    entries.push({
      family,
      address: address.toString("latin1"),
      number: number.toString("latin1"),
      name: name.toString("latin1"),
      data: Buffer.from(data),
    });
  }
  return entries;
}

/**
 * The cookie for a display, as Xlib would choose it closely enough: MIT-MAGIC-COOKIE-1 entries for
 * this display number (or any), this host's own entry first, then a wildcard, then any other.
 */
export function pickCookie(entries: readonly XAuthEntry[], display: number, host = hostname()) {
  const rank = (e: XAuthEntry) =>
    e.family === FAMILY_LOCAL && e.address === host ? 0 : e.family === FAMILY_WILD ? 1 : 2;
  return entries
    .filter((e) => e.name === COOKIE && (e.number === "" || e.number === String(display)))
    .sort((a, b) => rank(a) - rank(b))[0];
}

function readCookie(display: number, env: Record<string, string | undefined>): Buffer | undefined {
  const file = env.XAUTHORITY || (env.HOME ? join(env.HOME, ".Xauthority") : undefined);
  if (!file) return undefined;
  try {
    return pickCookie(parseXauthority(readFileSync(file)), display)?.data;
  } catch {
    return undefined;
  }
}

/** Buffers a socket's bytes and hands out exactly as many as asked for. */
class ByteReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private waiting?: { n: number; done: (b: Buffer) => void; fail: (e: Error) => void };
  private failure?: Error;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    this.wake();
  }

  fail(error: Error): void {
    this.failure ??= error;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.fail(error);
  }

  read(n: number): Promise<Buffer> {
    return new Promise((done, fail) => {
      this.waiting = { n, done, fail };
      this.wake();
    });
  }

  private wake(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    if (this.size >= waiting.n) {
      const all = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
      this.chunks = all.length > waiting.n ? [all.subarray(waiting.n)] : [];
      this.size = all.length - waiting.n;
      this.waiting = undefined;
      waiting.done(all.subarray(0, waiting.n));
    } else if (this.failure) {
      this.waiting = undefined;
      waiting.fail(this.failure);
    }
  }
}

const pad4 = (n: number) => (4 - (n % 4)) % 4;

function setupRequest(cookie: Buffer | undefined): Buffer {
  const name = cookie ? Buffer.from(COOKIE, "latin1") : Buffer.alloc(0);
  const data = cookie ?? Buffer.alloc(0);
  const head = Buffer.alloc(12);
  head.write("l", 0, "latin1");
  head.writeUInt16LE(11, 2);
  head.writeUInt16LE(0, 4);
  head.writeUInt16LE(name.length, 6);
  head.writeUInt16LE(data.length, 8);
  return Buffer.concat([head, name, Buffer.alloc(pad4(name.length)), data, Buffer.alloc(pad4(data.length))]);
}

/** The server's answer to the handshake (after its 8-byte head), when it said yes. */
export function parseSetup(body: Buffer): X11Setup {
  const vendorLength = body.readUInt16LE(16);
  const screenCount = body.readUInt8(20);
  const formatCount = body.readUInt8(21);
  const imageByteOrder = body.readUInt8(22);
  let at = 32;
  const vendor = body.toString("latin1", at, at + vendorLength);
  at += vendorLength + pad4(vendorLength);
  const formats = [];
  for (let i = 0; i < formatCount; i += 1, at += 8) {
    formats.push({
      depth: body.readUInt8(at),
      bitsPerPixel: body.readUInt8(at + 1),
      scanlinePad: body.readUInt8(at + 2),
    });
  }
  const screens: X11Screen[] = [];
  for (let s = 0; s < screenCount; s += 1) {
    const screen: X11Screen = {
      root: body.readUInt32LE(at),
      width: body.readUInt16LE(at + 20),
      height: body.readUInt16LE(at + 22),
      rootVisual: body.readUInt32LE(at + 32),
      rootDepth: body.readUInt8(at + 38),
      visuals: new Map(),
    };
    const depthCount = body.readUInt8(at + 39);
    at += 40;
    for (let d = 0; d < depthCount; d += 1) {
      const visualCount = body.readUInt16LE(at + 2);
      at += 8;
      for (let v = 0; v < visualCount; v += 1, at += 24) {
        const id = body.readUInt32LE(at);
        screen.visuals.set(id, {
          id,
          visualClass: body.readUInt8(at + 4),
          redMask: body.readUInt32LE(at + 8),
          greenMask: body.readUInt32LE(at + 12),
          blueMask: body.readUInt32LE(at + 16),
        });
      }
    }
    screens.push(screen);
  }
  return { vendor, imageByteOrder, formats, screens };
}

export interface X11Connection {
  setup: X11Setup;
  /** The screen DISPLAY names (`:0.1` is screen 1). */
  screen: X11Screen;
  /** The whole root window as ZPixmap data, with the depth the server sent it in. */
  getRootImage(): Promise<{ depth: number; visual: number; data: Buffer }>;
  close(): void;
}

/** Where a display name says to connect: the local socket (and Linux's abstract one), or TCP. */
function targets(name: DisplayName): { path?: string; host?: string; port?: number }[] {
  if (name.host === "" || name.host === "unix") {
    const path = `/tmp/.X11-unix/X${name.display}`;
    return process.platform === "linux" ? [{ path }, { path: `\0${path}` }] : [{ path }];
  }
  return [{ host: name.host, port: 6000 + name.display }];
}

function connectOnce(target: { path?: string; host?: string; port?: number }): Promise<Socket> {
  return new Promise((done, fail) => {
    const socket = target.path ? connect(target.path) : connect(target.port ?? 6000, target.host);
    socket.once("connect", () => {
      socket.removeAllListeners("error");
      done(socket);
    });
    socket.once("error", (err) => {
      socket.destroy();
      fail(err);
    });
  });
}

/**
 * Connects and completes the handshake. Rejects with an X11Error: `unreachable` when no server
 * answers at that name, `refused` when it answers no (usually authorization: XAUTHORITY).
 */
export async function openDisplay(
  displayName: string,
  env: Record<string, string | undefined>,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<X11Connection> {
  const name = parseDisplayName(displayName);
  if (!name) {
    throw new X11Error({ kind: "unreachable", reason: `"${displayName}" is not an X display name` });
  }
  let socket: Socket | undefined;
  const errors: string[] = [];
  for (const target of targets(name)) {
    try {
      socket = await connectOnce(target);
      break;
    } catch (err) {
      errors.push((err as NodeJS.ErrnoException).code ?? (err as Error).message);
    }
  }
  if (!socket) {
    const where = name.host ? `${name.host}:${6000 + name.display}` : `/tmp/.X11-unix/X${name.display}`;
    throw new X11Error({
      kind: "unreachable",
      reason: `no X server answers at display ${displayName} (${where}: ${[...new Set(errors)].join(", ")})`,
    });
  }
  const open = socket;
  const reader = new ByteReader();
  open.on("data", (chunk: Buffer) => reader.push(chunk));
  open.on("error", (err) => reader.fail(err));
  open.on("close", () => reader.fail(new Error("the X server closed the connection")));
  const stop = () => {
    reader.fail(new Error("stopped: the move was cancelled or ran out of time"));
    open.destroy();
  };
  const timer = setTimeout(stop, options.timeoutMs);
  options.signal?.addEventListener("abort", stop, { once: true });
  const release = () => {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", stop);
  };
  try {
    open.write(setupRequest(readCookie(name.display, env)));
    const head = await reader.read(8);
    const body = await reader.read(head.readUInt16LE(6) * 4);
    if (head[0] !== 1) {
      const said = head[0] === 0 ? body.toString("latin1", 0, head[1]) : "more authentication required";
      throw new X11Error({
        kind: "refused",
        reason: `the X server at ${displayName} refused the connection: ${said.trim()} (check XAUTHORITY)`,
      });
    }
    const setup = parseSetup(body);
    const screen = setup.screens[name.screen];
    if (!screen) {
      throw new X11Error({
        kind: "unreachable",
        reason: `display ${displayName} has no screen ${name.screen} (it has ${setup.screens.length})`,
      });
    }
    return {
      setup,
      screen,
      async getRootImage() {
        const request = Buffer.alloc(20);
        request.writeUInt8(73, 0); // GetImage
        request.writeUInt8(2, 1); // ZPixmap
        request.writeUInt16LE(5, 2);
        request.writeUInt32LE(screen.root, 4);
        request.writeUInt16LE(screen.width, 12);
        request.writeUInt16LE(screen.height, 14);
        request.writeUInt32LE(0xffffffff, 16);
        open.write(request);
        for (;;) {
          const reply = await reader.read(32);
          if (reply[0] === 0) {
            throw new X11Error({
              kind: "protocol",
              reason: `the X server answered GetImage with error ${reply[1]}`,
            });
          }
          if (reply[0] !== 1) continue; // an event: none were asked for, but skip any
          const data = await reader.read(reply.readUInt32LE(4) * 4);
          return { depth: reply.readUInt8(1), visual: reply.readUInt32LE(8), data };
        }
      },
      close() {
        release();
        open.destroy();
      },
    };
  } catch (err) {
    release();
    open.destroy();
    if (err instanceof X11Error) throw err;
    throw new X11Error({
      kind: "protocol",
      reason: `X handshake with ${displayName} failed: ${(err as Error).message}`,
    });
  }
}

/** How a mask's bits sit: its lowest bit and how many there are. */
function channel(mask: number): { shift: number; bits: number } {
  let shift = 0;
  while (shift < 32 && ((mask >>> shift) & 1) === 0) shift += 1;
  let bits = 0;
  while (shift + bits < 32 && ((mask >>> (shift + bits)) & 1) === 1) bits += 1;
  return { shift, bits };
}

const VISUAL_CLASSES = ["StaticGray", "GrayScale", "StaticColor", "PseudoColor", "TrueColor", "DirectColor"];

/**
 * ZPixmap pixels of a TrueColor visual as 8-bit RGB rows, or why this picture's form is not read
 * here (a colormap-indexed visual, an unusual pixel size): the caller then falls back.
 */
export function toRgb(
  image: { depth: number; visual: number; data: Buffer },
  setup: X11Setup,
  screen: X11Screen,
): { rgb: Buffer } | { unsupported: string } {
  const visual = screen.visuals.get(image.visual || screen.rootVisual);
  const format = setup.formats.find((f) => f.depth === image.depth);
  if (!visual || !format) return { unsupported: `depth ${image.depth} has no known visual or pixmap format` };
  const bpp = format.bitsPerPixel;
  if (visual.visualClass !== 4 || (bpp !== 16 && bpp !== 24 && bpp !== 32)) {
    const kind = VISUAL_CLASSES[visual.visualClass] ?? `class ${visual.visualClass}`;
    return {
      unsupported: `its root window is a ${kind} visual at depth ${image.depth}, ${bpp} bits per pixel`,
    };
  }
  const stride = (Math.ceil((screen.width * bpp) / format.scanlinePad) * format.scanlinePad) / 8;
  if (image.data.length < stride * screen.height) return { unsupported: "GetImage returned too few bytes" };
  const bytes = bpp / 8;
  const little = setup.imageByteOrder === 0;
  const read = (at: number) =>
    bytes === 4
      ? little
        ? image.data.readUInt32LE(at)
        : image.data.readUInt32BE(at)
      : bytes === 2
        ? little
          ? image.data.readUInt16LE(at)
          : image.data.readUInt16BE(at)
        : little
          ? image.data.readUIntLE(at, 3)
          : image.data.readUIntBE(at, 3);
  const channels = [visual.redMask, visual.greenMask, visual.blueMask].map(channel);
  const scale = channels.map(({ bits }) => (bits >= 8 ? 0 : 255 / (2 ** bits - 1)));
  const rgb = Buffer.alloc(screen.width * screen.height * 3);
  let out = 0;
  for (let y = 0; y < screen.height; y += 1) {
    for (let x = 0, at = y * stride; x < screen.width; x += 1, at += bytes) {
      const pixel = read(at);
      for (let c = 0; c < 3; c += 1) {
        const { shift, bits } = channels[c] as { shift: number; bits: number };
        const value = (pixel >>> shift) & (2 ** bits - 1);
        rgb[out++] = bits >= 8 ? value >>> (bits - 8) : Math.round(value * (scale[c] as number));
      }
    }
  }
  return { rgb };
}
