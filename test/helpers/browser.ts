/**
 * What the browser suites need around playwright-core: where Debian's chromium is, a page that
 * records every console error and uncaught exception, where screenshots go, and a small PNG decoder
 * to prove a screenshot shows something (a blank page is one or two colours).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { inflateSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";

/** `SPAR_CHROMIUM`, else Debian's package's path. */
export const CHROMIUM_PATH = process.env.SPAR_CHROMIUM ?? "/usr/bin/chromium";

export { underCi } from "./ci.js";

export function chromiumInstalled(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** A folder for this suite's screenshots: `SPAR_TEST_OUTPUT` or `.spar-test-output/` (git-ignored). */
export function outputDir(suite: string): string {
  const base = process.env.SPAR_TEST_OUTPUT ?? resolve(import.meta.dirname, "..", "..", ".spar-test-output");
  const dir = join(base, suite);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface WatchedPage {
  page: Page;
  /** Console errors and uncaught exceptions, in order. */
  errors: string[];
  close(): Promise<void>;
}

/** A new page in its own context, recording console errors and uncaught exceptions. */
export async function openPage(browser: Browser): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
  return { page, errors, close: () => context.close() };
}

export interface PngSummary {
  width: number;
  height: number;
  /** How many different pixel values the image holds. */
  colours: number;
}

/** Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium's screenshots are). */
export function summarizePng(png: Buffer): PngSummary {
  if (!png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    throw new Error("not a PNG");
  }
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString("ascii", at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colourType, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      channels = colourType === 6 ? 4 : colourType === 2 ? 3 : 0;
      if (depth !== 8 || channels === 0 || interlace !== 0) {
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colourType}, interlace ${interlace}`);
      }
    } else if (type === "IDAT") data.push(body);
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  let previous: Buffer = Buffer.alloc(stride);
  const colours = new Set<string>();
  for (let y = 0; y < height; y++) {
    const start = y * (stride + 1);
    const row = unfilter(raw[start] ?? 0, raw.subarray(start + 1, start + 1 + stride), previous, channels);
    for (let x = 0; x < stride; x += channels) colours.add(row.toString("hex", x, x + channels));
    previous = row;
  }
  return { width, height, colours: colours.size };
}

/** Undoes one scanline's filter (PNG §9.2). */
function unfilter(filter: number, line: Buffer, above: Buffer, bpp: number): Buffer {
  const out = Buffer.alloc(line.length);
  for (let i = 0; i < line.length; i++) {
    const a = i >= bpp ? (out[i - bpp] ?? 0) : 0;
    const b = above[i] ?? 0;
    const c = i >= bpp ? (above[i - bpp] ?? 0) : 0;
    const x = line[i] ?? 0;
    let predicted = 0;
    if (filter === 1) predicted = a;
    else if (filter === 2) predicted = b;
    else if (filter === 3) predicted = (a + b) >> 1;
    else if (filter === 4) {
      const p = a + b - c;
      const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
      predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
    } else if (filter !== 0) throw new Error(`unknown PNG filter ${filter}`);
    out[i] = (x + predicted) & 0xff;
  }
  return out;
}
