import { inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { encodePng, PNG_SIGNATURE, pngSize } from "./png.js";

describe("the PNG writer", () => {
  it("writes a PNG whose header, chunks and pixels read back", async () => {
    const rgb = Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    const png = await encodePng(rgb, 3, 2);
    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(pngSize(png)).toEqual({ width: 3, height: 2 });
    const chunks: string[] = [];
    let idat: Buffer = Buffer.alloc(0);
    for (let at = 8; at < png.length; ) {
      const length = png.readUInt32BE(at);
      const type = png.toString("latin1", at + 4, at + 8);
      chunks.push(type);
      if (type === "IDAT") idat = png.subarray(at + 8, at + 8 + length);
      at += 12 + length;
    }
    expect(chunks).toEqual(["IHDR", "IDAT", "IEND"]);
    // Each row: filter byte 0, then the pixels as given.
    expect([...inflateSync(idat)]).toEqual([0, ...rgb.subarray(0, 9), 0, ...rgb.subarray(9)]);
    // The IEND chunk's CRC is the well-known one, so the CRC code is right.
    expect(png.subarray(-4).toString("hex")).toBe("ae426082");
  });

  it("says a file that is not a PNG has no size", () => {
    expect(pngSize(Buffer.from("GIF89a and then some more bytes here"))).toBeUndefined();
    expect(pngSize(PNG_SIGNATURE)).toBeUndefined();
  });
});
