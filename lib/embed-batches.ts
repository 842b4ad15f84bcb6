import { DEFAULT_EMBED_BATCH, MAX_EMBED_BATCH } from "../sdk/schemas.js";
import type { EmbedRequest, EmbedResponse, LlmDriver } from "../sdk/types.js";
import { checkEmbeddings, providerError } from "./provider-errors.js";

/**
 * Embeds `request.input` in batches of `batchSize` texts (at most MAX_EMBED_BATCH), one `send` per
 * batch in turn (the kernel's provider policy: deadline and retries), the vectors kept in input
 * order and all of one length, the tokens summed. PROVIDER_ERROR naming the provider when its
 * driver has no `embed`.
 *
 * @example
 * const reply = await embedInBatches(driver, request, 64, (embed, batch) => embed(batch));
 */
export async function embedInBatches(
  driver: LlmDriver,
  request: EmbedRequest,
  batchSize: number = DEFAULT_EMBED_BATCH,
  send: (embed: NonNullable<LlmDriver["embed"]>, batch: EmbedRequest) => Promise<EmbedResponse>,
): Promise<EmbedResponse> {
  const embed = driver.embed?.bind(driver);
  if (!embed) {
    throw providerError(
      driver.provider,
      "this provider has no embeddings API; pick one whose plugin embeds",
      {
        retryable: false,
      },
    );
  }
  const size = Math.max(1, Math.min(MAX_EMBED_BATCH, Math.floor(batchSize)));
  const vectors: number[][] = [];
  let tokens: number | undefined;
  for (let at = 0; at < request.input.length; at += size) {
    const batch = { ...request, input: request.input.slice(at, at + size) };
    const reply = await send(embed, batch);
    // Every batch as long as the first: vectors of two lengths cannot be compared.
    const dimensions = request.dimensions ?? vectors[0]?.length;
    vectors.push(...checkEmbeddings(driver.provider, { ...batch, dimensions }, reply.vectors));
    if (reply.usage) tokens = (tokens ?? 0) + reply.usage.input_tokens;
  }
  return tokens === undefined ? { vectors } : { vectors, usage: { input_tokens: tokens } };
}
