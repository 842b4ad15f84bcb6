/**
 * A command's stdout and stderr, kept up to one limit for both together, in arrival order: once
 * `max` bytes are kept the rest is only counted (the pipes are still drained, so the program never
 * blocks on a full pipe). A cut stream ends on a whole UTF-8 character, then a marker saying how much
 * was dropped and what to do about it.
 */
export type StreamName = "stdout" | "stderr";

export interface CollectedOutput {
  stdout: string;
  stderr: string;
  truncated: boolean;
}

export interface OutputCollector {
  add(stream: StreamName, chunk: Buffer): void;
  /** More arrived than the limit keeps. */
  full(): boolean;
  /** The text of both streams; `transform` sees each before its marker (`cut` when it was cut). */
  finish(transform?: (text: string, cut: boolean) => string): CollectedOutput;
}

export function collectOutput(max: number): OutputCollector {
  let kept = 0;
  const streams = {
    stdout: { chunks: [] as Buffer[], kept: 0, seen: 0 },
    stderr: { chunks: [] as Buffer[], kept: 0, seen: 0 },
  };
  return {
    add(name, chunk) {
      const stream = streams[name];
      stream.seen += chunk.length;
      const room = max - kept;
      if (room <= 0) return;
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      stream.chunks.push(part);
      stream.kept += part.length;
      kept += part.length;
    },
    full() {
      return streams.stdout.seen + streams.stderr.seen > max;
    },
    finish(transform = (text) => text) {
      const text = (name: StreamName) => {
        const stream = streams[name];
        const cut = stream.seen > stream.kept;
        const kept = Buffer.concat(stream.chunks);
        const bytes = cut ? wholeCharacters(kept) : kept;
        const body = transform(bytes.toString("utf8"), cut);
        if (!cut) return body;
        return `${body}\n[cut: ${stream.seen - bytes.length} more bytes of ${name} not shown (the limit is ${max} bytes of output per command); the command was stopped there; filter its output, or write it to a file and read that in parts]`;
      };
      return {
        stdout: text("stdout"),
        stderr: text("stderr"),
        truncated: streams.stdout.seen > streams.stdout.kept || streams.stderr.seen > streams.stderr.kept,
      };
    },
  };
}

/** `bytes` without an incomplete UTF-8 sequence at its end (what a cut can leave). */
export function wholeCharacters(bytes: Buffer): Buffer {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? bytes.subarray(0, bytes.length - back) : bytes;
  }
  return bytes;
}
