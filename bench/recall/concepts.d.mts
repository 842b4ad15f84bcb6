/** The lowercase words of a text, as the embedder reads them. */
export function words(text: string): string[];
/** The normalised bag-of-concepts embedding of `text` (deterministic, no network). */
export function embed(text: string, dims?: number): number[];
/** Cosine similarity of two vectors of the same length (0 when either is zero). */
export function cosine(a: readonly number[], b: readonly number[]): number;
/** The embedder in the shape recall takes: `{ model, embed(texts, purpose) }`. */
export function conceptEmbedder(dims?: number): {
  model: string;
  embed(texts: readonly string[], purpose?: "document" | "query"): Promise<number[][]>;
};
