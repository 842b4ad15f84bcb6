/**
 * Vectors by meaning, searched in this process: each stored as int8 (a scale per vector) and, past
 * EXACT_LIMIT components in all, as a 512-bit sign sketch of a randomised Hadamard rotation, so a
 * search at 100,000 memories reads 64 bytes a vector to find its candidates and rescores only those
 * (bench/parts/recall-speed.mjs). Cosine similarity throughout: vectors are normalised on the way in.
 */

/** A scan of every int8 vector is quick enough below this many components (vectors × dims). */
export const EXACT_LIMIT = 4_000_000;
/** How many sketch candidates a search rescores exactly, at least. */
export const MIN_CANDIDATES = 400;
const SKETCH_BITS = 512;

/** A vector found by a search: its id and how close it is. */
export interface VectorHit {
  id: string;
  /** Cosine similarity with the query, −1 … 1. */
  score: number;
}

/** Unit length (a zero vector stays zero). */
export function normalise(vector: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(vector);
  let sum = 0;
  for (const x of out) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) / norm;
  return out;
}

/** Cosine of two normalised vectors. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

/** A vector as stored: int8 components and their scale, base64 (what the `vectors` collection holds). */
export function encodeVector(vector: ArrayLike<number>): string {
  const v = normalise(vector);
  const { codes, scale } = quantise(v);
  const out = Buffer.alloc(4 + codes.length);
  out.writeFloatLE(scale, 0);
  Buffer.from(codes.buffer, codes.byteOffset, codes.length).copy(out, 4);
  return out.toString("base64");
}

/** A stored vector (`encodeVector`) back as numbers: unit length, within 1% of what was stored. */
export function decodeVector(text: string): Float32Array {
  const raw = Buffer.from(text, "base64");
  const scale = raw.readFloatLE(0);
  const out = new Float32Array(raw.length - 4);
  for (let i = 0; i < out.length; i++) out[i] = raw.readInt8(4 + i) * scale;
  return out;
}

function quantise(v: Float32Array): { codes: Int8Array; scale: number } {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  const scale = max > 0 ? max / 127 : 1;
  const codes = Int8Array.from(v, (x) => Math.round(x / scale));
  return { codes, scale };
}

function popcount(x: number): number {
  let y = x - ((x >>> 1) & 0x55555555);
  y = (y & 0x33333333) + ((y >>> 2) & 0x33333333);
  return (((y + (y >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Seeded signs (xorshift), the same in every process: a sketch stays comparable after a restart. */
function signs(n: number): Float32Array {
  const out = new Float32Array(n);
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 1 ? 1 : -1;
  }
  return out;
}

/**
 * One index: the vectors of one fighter and kind (memories, passages), all of one model and size.
 *
 * @example
 * const index = new VectorIndex(256);
 * index.upsert("m1", vector);
 * index.search(query, 5); // [{ id: "m1", score: 0.93 }]
 */
export class VectorIndex {
  readonly dims: number;
  private ids: string[] = [];
  private positions = new Map<string, number>();
  private codes: Int8Array;
  private scales: Float32Array;
  private sketches: Uint32Array;
  private readonly padded: number;
  private readonly words: number;
  private readonly flips: Float32Array;

  constructor(dims: number) {
    this.dims = dims;
    this.padded = 2 ** Math.ceil(Math.log2(Math.max(dims, 2)));
    this.words = Math.min(SKETCH_BITS, this.padded) / 32;
    this.flips = signs(this.padded);
    this.codes = new Int8Array(64 * dims);
    this.scales = new Float32Array(64);
    this.sketches = new Uint32Array(64 * this.words);
  }

  get size(): number {
    return this.ids.length;
  }

  /** What the index holds in memory, in bytes (its arrays' capacity and the ids). */
  get bytes(): number {
    return this.codes.byteLength + this.scales.byteLength + this.sketches.byteLength + this.ids.length * 80;
  }

  has(id: string): boolean {
    return this.positions.has(id);
  }

  /** `id`'s vector as held (int8 scaled back: within 1% of the original), or undefined. */
  vector(id: string): Float32Array | undefined {
    const at = this.positions.get(id);
    if (at === undefined) return undefined;
    const scale = this.scales[at] as number;
    const out = new Float32Array(this.dims);
    const base = at * this.dims;
    for (let i = 0; i < this.dims; i++) out[i] = (this.codes[base + i] as number) * scale;
    return out;
  }

  /** Adds or replaces `id`'s vector; a vector of another length is refused (a model's size changed). */
  upsert(id: string, vector: ArrayLike<number>): void {
    if (vector.length !== this.dims) {
      throw new RangeError(`a vector of ${vector.length} dimensions in an index of ${this.dims}`);
    }
    const v = normalise(vector);
    let at = this.positions.get(id);
    if (at === undefined) {
      at = this.ids.length;
      this.grow(at + 1);
      this.ids.push(id);
      this.positions.set(id, at);
    }
    const { codes, scale } = quantise(v);
    this.codes.set(codes, at * this.dims);
    this.scales[at] = scale;
    this.sketches.set(this.sketch(v), at * this.words);
  }

  remove(id: string): void {
    const at = this.positions.get(id);
    if (at === undefined) return;
    const last = this.ids.length - 1;
    if (at !== last) {
      const moved = this.ids[last] as string;
      this.ids[at] = moved;
      this.positions.set(moved, at);
      this.codes.copyWithin(at * this.dims, last * this.dims, (last + 1) * this.dims);
      this.scales[at] = this.scales[last] as number;
      this.sketches.copyWithin(at * this.words, last * this.words, (last + 1) * this.words);
    }
    this.ids.pop();
    this.positions.delete(id);
  }

  /** The `k` nearest by cosine, best first; `allow` leaves ids out before ranking. */
  search(query: ArrayLike<number>, k: number, allow?: (id: string) => boolean): VectorHit[] {
    if (query.length !== this.dims || this.ids.length === 0 || k <= 0) return [];
    const q = normalise(query);
    const exact = this.ids.length * this.dims <= EXACT_LIMIT;
    const candidates = exact ? undefined : this.candidates(q, Math.max(MIN_CANDIDATES, k * 20));
    const hits: VectorHit[] = [];
    const score = (at: number) => {
      const id = this.ids[at] as string;
      if (allow && !allow(id)) return;
      let s = 0;
      const base = at * this.dims;
      for (let i = 0; i < this.dims; i++) s += (this.codes[base + i] as number) * (q[i] as number);
      hits.push({ id, score: s * (this.scales[at] as number) });
    };
    if (candidates) for (const at of candidates) score(at);
    else for (let at = 0; at < this.ids.length; at++) score(at);
    return hits.sort((a, b) => b.score - a.score).slice(0, k);
  }

  /** Positions of the `count` vectors whose sketches are nearest the query's (Hamming, by histogram). */
  private candidates(q: Float32Array, count: number): number[] {
    const mine = this.sketch(q);
    const n = this.ids.length;
    const words = this.words;
    const distances = new Uint16Array(n);
    const histogram = new Uint32Array(words * 32 + 1);
    for (let at = 0; at < n; at++) {
      let d = 0;
      const base = at * words;
      for (let w = 0; w < words; w++)
        d += popcount(((this.sketches[base + w] as number) ^ (mine[w] as number)) >>> 0);
      distances[at] = d;
      histogram[d] = (histogram[d] as number) + 1;
    }
    let cut = 0;
    for (let seen = 0; cut < histogram.length && seen < count; cut++) seen += histogram[cut] as number;
    const out: number[] = [];
    for (let at = 0; at < n; at++) if ((distances[at] as number) < cut) out.push(at);
    return out;
  }

  /** Signs of a randomised Hadamard rotation of `v`: bit i set when component i is positive. */
  private sketch(v: Float32Array): Uint32Array {
    const x = new Float32Array(this.padded);
    for (let i = 0; i < v.length; i++) x[i] = (v[i] as number) * (this.flips[i] as number);
    for (let h = 1; h < x.length; h *= 2) {
      for (let i = 0; i < x.length; i += h * 2) {
        for (let j = i; j < i + h; j++) {
          const a = x[j] as number;
          const b = x[j + h] as number;
          x[j] = a + b;
          x[j + h] = a - b;
        }
      }
    }
    const out = new Uint32Array(this.words);
    for (let bit = 0; bit < this.words * 32; bit++) {
      if ((x[bit] as number) > 0) out[bit >>> 5] = ((out[bit >>> 5] as number) | (1 << (bit & 31))) >>> 0;
    }
    return out;
  }

  private grow(needed: number): void {
    if (needed <= this.scales.length) return;
    const capacity = Math.max(needed, this.scales.length * 2);
    const codes = new Int8Array(capacity * this.dims);
    codes.set(this.codes);
    const scales = new Float32Array(capacity);
    scales.set(this.scales);
    const sketches = new Uint32Array(capacity * this.words);
    sketches.set(this.sketches);
    this.codes = codes;
    this.scales = scales;
    this.sketches = sketches;
  }
}
