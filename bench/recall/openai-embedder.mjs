// A real embedding model for the recall benchmark, through the official openai SDK: OpenAI itself
// (`--embeddings openai:text-embedding-3-small`, key from OPENAI_API_KEY or --embeddings-key-env) or
// any OpenAI-compatible /v1/embeddings endpoint (`--embeddings-url http://127.0.0.1:11434/v1` for a
// local Ollama, no key needed). Vectors are cached by text for the run, so each text is sent once.

/** Parses "openai:MODEL" (the only provider prefix; a bare "MODEL" means the same). */
export function parseEmbeddingsFlag(flag) {
  const [provider, ...rest] = flag.includes(":") ? flag.split(":") : ["openai", flag];
  const model = rest.join(":");
  if (provider !== "openai" || !model) {
    throw new Error(
      `recall bench: --embeddings wants openai:MODEL (any OpenAI-compatible endpoint, with --embeddings-url), not "${flag}"`,
    );
  }
  return model;
}

/** `{ model, embed(texts, purpose) }` over the openai SDK; the key is read from `keyEnv` (never printed). */
export async function openaiEmbedder({ model, baseURL, keyEnv = "OPENAI_API_KEY" }) {
  const { default: OpenAI } = await import("openai");
  const apiKey = process.env[keyEnv] ?? (baseURL ? "unused" : undefined);
  if (!apiKey)
    throw new Error(`recall bench: set ${keyEnv} for OpenAI embeddings (or give --embeddings-url)`);
  const client = new OpenAI({ apiKey, ...(baseURL ? { baseURL } : {}), maxRetries: 3 });
  const cache = new Map();
  return {
    model: `${model}${baseURL ? ` at ${baseURL}` : ""}`,
    async embed(texts) {
      const missing = [...new Set(texts.filter((t) => !cache.has(t)))];
      for (let i = 0; i < missing.length; i += 128) {
        const batch = missing.slice(i, i + 128);
        // Floats, not the SDK's default base64: not every OpenAI-compatible server speaks base64.
        const res = await client.embeddings.create({ model, input: batch, encoding_format: "float" });
        for (const item of res.data) cache.set(batch[item.index], item.embedding);
      }
      return texts.map((t) => cache.get(t));
    },
  };
}
