/**
 * The OpenAI-compatible API (DESIGN §6), so any OpenAI client can talk to a fighter: `POST
 * /v1/chat/completions`, where `model` names a fighter, streamed or not, and `GET /v1/models`, the
 * fighters as models. Registered under `/v1` in a context of its own, so every error on these paths,
 * an authentication or body refusal included, is answered in OpenAI's envelope (openai-errors.ts).
 * Authentication is the API's (security.ts): an OpenAI client's `Authorization: Bearer` key is not
 * Spar's, and is ignored.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isSparError, type Logger, type PluginData, type RingServices, SparError } from "../../sdk/index.js";
import { createOpenAiBouts } from "./openai-bouts.js";
import { toOpenAiError } from "./openai-errors.js";
import {
  type ChatRequest,
  chatBody,
  chatHeaders,
  chatResponses,
  modelParams,
  modelResponses,
  modelsResponses,
} from "./openai-schema.js";
import { type CompletionHead, completionOf, headOf, lastUserText, modelOf } from "./openai-shapes.js";
import { streamCompletion } from "./openai-stream.js";
import { notFound } from "./public-assets.js";
import { disconnectSignal } from "./routes.js";

type ChatRoute = { Body: ChatRequest; Headers: { "x-spar-bout"?: string } };

/** The fighter a request without `model` talks to: the default one. */
const DEFAULT_FIGHTER = "spar";

/** The routes under `/v1`: `app.register(openAiRoutes(ring, log, data), { prefix: "/v1" })`. */
export function openAiRoutes(ring: RingServices, log: Logger, data: PluginData) {
  const bouts = createOpenAiBouts(data);

  /** The fighter `model` names; an unknown one is OpenAI's `model_not_found`. */
  async function fighterFor(model: string) {
    try {
      return await ring.fighters.get(model);
    } catch (err) {
      if (!isSparError(err, "FIGHTER_NOT_FOUND")) throw err;
      throw new SparError(
        "FIGHTER_NOT_FOUND",
        `no fighter "${model}": model is a fighter's name or id (GET /v1/models lists them)`,
      );
    }
  }

  async function chat(request: FastifyRequest<ChatRoute>, reply: FastifyReply) {
    const body = request.body;
    if (body.n !== undefined && body.n !== null && body.n !== 1) {
      throw new SparError("VALIDATION_FAILED", "n must be 1: a fighter gives one answer to a message", {
        path: "/body/n",
      });
    }
    const text = lastUserText(body.messages);
    const fighter = await fighterFor(body.model ?? DEFAULT_FIGHTER);
    const created = Math.floor(Date.now() / 1000);
    // The client leaving cancels its turn, streamed or not.
    const signal = disconnectSignal(reply);
    let head: CompletionHead | undefined;
    const run = (onDelta?: (text: string) => void) =>
      bouts.run(
        { fighterId: fighter.id, header: request.headers["x-spar-bout"], user: body.user },
        (options, boutStarted) =>
          ring.fighters.message(fighter.id, text, {
            ...options,
            signal,
            ...(onDelta ? { onDelta } : {}),
            started: ({ turn_id, bout_id }) => {
              head = headOf(turn_id, created, fighter);
              // Set now, so a turn that fails after it started still says which bout it is in.
              reply.header("x-spar-bout", bout_id);
              boutStarted(bout_id);
            },
          }),
      );
    if (body.stream !== true) {
      const result = await run();
      return completionOf(headOf(result.turn_id, created, fighter), result);
    }
    const includeUsage = body.stream_options?.include_usage === true;
    await streamCompletion(
      reply,
      {
        includeUsage,
        head: () => {
          // The kernel records the turn before the model's first token.
          if (!head) throw new SparError("INTERNAL", "the turn streamed before it was recorded");
          return head;
        },
      },
      run,
    );
    return reply;
  }

  return async (app: FastifyInstance) => {
    app.setErrorHandler((err: Error, request, reply) => {
      const answer = toOpenAiError(err);
      if (answer.body.error.code === "INTERNAL") {
        log.error("request failed", { method: request.method, url: request.url, error: err.message });
      }
      reply.status(answer.status).headers(answer.headers).send(answer.body);
    });

    app.post<ChatRoute>(
      "/chat/completions",
      {
        schema: {
          operationId: "createChatCompletion",
          summary: "OpenAI-compatible chat completion: `model` names the fighter",
          body: chatBody,
          headers: chatHeaders,
          response: chatResponses,
        },
      },
      chat,
    );

    const listModels = {
      operationId: "listModels",
      summary: "OpenAI-compatible: the fighters, as models",
      response: modelsResponses,
    };
    app.get("/models", { schema: listModels }, async () => ({
      object: "list",
      data: (await ring.fighters.list()).map(modelOf),
    }));

    app.get<{ Params: { model: string } }>(
      "/models/:model",
      {
        schema: {
          operationId: "getModel",
          summary: "OpenAI-compatible: a fighter, as a model",
          params: modelParams,
          response: modelResponses,
        },
      },
      async (request) => modelOf(await fighterFor(request.params.model)),
    );

    // Nothing else lives under /v1 (`/` is /v1 itself): an unknown path is a 404 in OpenAI's
    // envelope, never a page.
    for (const url of ["/", "/*"]) {
      app.route({
        method: ["GET", "POST", "PUT", "DELETE", "PATCH"],
        url,
        // Not an operation: left out of the OpenAPI document.
        schema: { hide: true },
        handler: async (request) => {
          throw notFound(request);
        },
      });
    }
  };
}
