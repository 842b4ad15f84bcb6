/**
 * `spar/sdk/recall`: finding what fighters keep by meaning as well as by words, the same for every
 * plugin that keeps something to recall (memories, past conversations, the knowledge graph): texts
 * embedded off the reply's path by the `[memory.embeddings]` model (`createEmbeddings`, stored in the
 * plugin's own `vectors` collection), searched in the daemon (`VectorIndex`), and the rankings put
 * together (`fuse`, `closeness`, `diverse`, `newestFirst`).
 *
 * @example
 * import { createEmbeddings, closeness, fuse } from "spar/sdk/recall";
 * const embeddings = createEmbeddings({ config: api.config.memory.embeddings, ring: api.ring, data: api.data, log: api.log });
 * embeddings.enqueue("note", fighter.id, note.id, note.text);
 * const near = await embeddings.search("note", fighter.id, "where is the key?", 20); // undefined: words only
 */
export {
  createEmbeddings,
  DEFAULT_MIN_SIMILARITY,
  type Embeddings,
  type EmbedService,
  embeddingSettings,
  type Kind,
  modelKey,
  QUERY_WAIT_MS,
  type VectorRecord,
} from "../../lib/recall/embeddings.js";
export {
  closeness,
  diverse,
  fuse,
  MMR_LAMBDA,
  newestFirst,
  type PickOptions,
  pick,
  type Ranking,
  RRF_K,
  SAME_SUBJECT,
  wordOverlap,
} from "../../lib/recall/fusion.js";
export {
  cosine,
  decodeVector,
  encodeVector,
  normalise,
  type VectorHit,
  VectorIndex,
} from "../../lib/recall/vector-index.js";
