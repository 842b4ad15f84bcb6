import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute } from "node:path";
import type { FastifyInstance, FastifyReply } from "fastify";
import { cancellation, type RingServices, SparError } from "../../sdk/index.js";
import { FIGHTER_MANIFEST, originFilter, originMatches, shownBout } from "../../sdk/kits/http.js";
import { ID_PARAM, MESSAGE_FIELDS } from "./message-fields.js";
import { MESSAGE_RESPONSES, RESPONSES } from "./route-schemas.js";
import { streamReply } from "./sse.js";

const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: ID_PARAM },
} as const;

const messageBody = {
  type: "object",
  additionalProperties: false,
  required: ["message"],
  properties: MESSAGE_FIELDS,
} as const;

/** An Idempotency-Key: printable ASCII, as long as a UUID or a little more. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;

const spawnBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    manifest: { type: "object" },
    template: { type: "string", minLength: 1 },
    name: { type: "string", minLength: 1 },
  },
} as const;

/** The spawn body as documented: the kernel checks `manifest` against its own schema, for its error paths. */
const spawnDocumented = {
  ...spawnBody,
  properties: { ...spawnBody.properties, manifest: FIGHTER_MANIFEST },
  examples: [
    { manifest: { name: "scout", description: "finds things out", system_prompt: "You are scout." } },
    { template: "coder", name: "builder" },
  ],
};

/** A route's name, line and answers in the OpenAPI document (openapi.ts); fastify serialises with them. */
function doc<K extends keyof typeof RESPONSES>(operationId: K, summary: string) {
  return { operationId, summary, response: RESPONSES[operationId] };
}

const boutsQuery = {
  type: "object",
  additionalProperties: false,
  properties: { origin: { type: "string" } },
} as const;

const contextQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    bout: { type: "string", minLength: 1, maxLength: 200 },
    message: { type: "string", maxLength: 100_000 },
  },
} as const;

const messageToBody = {
  type: "object",
  additionalProperties: false,
  required: ["content"],
  properties: { content: { type: "string", minLength: 1 } },
} as const;

const backupBody = {
  type: "object",
  additionalProperties: false,
  required: ["path"],
  properties: { path: { type: "string", minLength: 1, maxLength: 4096 } },
} as const;

/**
 * The fighter, bout and move routes, registered under `/api/v1`; the spec's unversioned `/api/...`
 * aliases reach the same handlers through the Arena's URL rewrite (api-alias.ts).
 */
export function fighterRoutes(ring: RingServices) {
  return async (app: FastifyInstance) => {
    app.get("/fighters", { schema: doc("listFighters", "List the fighters") }, async () => ({
      fighters: await ring.fighters.list(),
    }));

    app.post<{ Body: { manifest?: unknown; template?: string; name?: string } }>(
      "/fighters",
      {
        schema: {
          ...doc("spawnFighter", "Spawn a fighter from a manifest or a template"),
          body: spawnBody,
          documentedBody: spawnDocumented,
        },
      },
      async (request, reply) => {
        const { manifest, template, name } = request.body;
        if ((manifest === undefined) === (template === undefined)) {
          throw new SparError(
            "VALIDATION_FAILED",
            "send exactly one of `manifest` (an object) or `template` (a kind)",
          );
        }
        if (manifest !== undefined && name !== undefined) {
          throw new SparError(
            "VALIDATION_FAILED",
            "`name` goes with `template`; a manifest carries its own name",
          );
        }
        const record = await ring.fighters.spawn(template !== undefined ? { template, name } : { manifest });
        return reply.status(201).send(record);
      },
    );

    app.get<{ Params: { id: string } }>(
      "/fighters/:id",
      { schema: { ...doc("getFighter", "Show a fighter"), params: idParams } },
      async (request) => ring.fighters.get(request.params.id),
    );

    app.delete<{ Params: { id: string } }>(
      "/fighters/:id",
      { schema: { ...doc("killFighter", "Kill a fighter (its bouts are kept)"), params: idParams } },
      async (request, reply) => {
        await ring.fighters.kill(request.params.id);
        return reply.status(204).send();
      },
    );

    const verbs = {
      message: { operationId: "sendMessage", summary: "Send a fighter a message; its reply, or streamed" },
      chat: { operationId: "sendChat", summary: "Send a fighter a message (the same as /message)" },
    };
    for (const [verb, named] of Object.entries(verbs)) {
      app.post<{ Params: { id: string }; Body: { message: string; bout_id?: string; bout?: "new" } }>(
        `/fighters/:id/${verb}`,
        { schema: { ...named, response: MESSAGE_RESPONSES, params: idParams, body: messageBody } },
        async (request, reply) => {
          const { id } = request.params;
          const { message, bout_id, bout } = request.body;
          const key = request.headers["idempotency-key"];
          if (key !== undefined && (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key))) {
            throw new SparError(
              "VALIDATION_FAILED",
              "Idempotency-Key must be 1 to 200 printable ASCII characters (a UUID is a good one)",
            );
          }
          // The client leaving cancels its turn: no tokens are spent on an answer nobody reads.
          const signal = disconnectSignal(reply);
          const options = { bout_id, bout, signal, ...(key ? { idempotency_key: key } : {}) };
          if (!request.headers.accept?.includes("text/event-stream")) {
            return ring.fighters.message(id, message, options);
          }
          await streamReply(reply, (onDelta, onApproval) =>
            ring.fighters.message(id, message, { ...options, onDelta, onApproval }),
          );
          return reply;
        },
      );
    }

    app.post<{ Params: { id: string } }>(
      "/fighters/:id/cancel",
      { schema: { ...doc("cancelTurn", "Cancel the fighter's running turn"), params: idParams } },
      async (request) => ({ cancelled: true, ...(await ring.fighters.cancel(request.params.id)) }),
    );

    app.post<{ Params: { id: string; target: string }; Body: { content: string } }>(
      "/fighters/:id/message-to/:target",
      {
        schema: {
          operationId: "messageFighterToFighter",
          summary: "Send a message from one fighter to another, as that fighter",
          response: MESSAGE_RESPONSES,
          body: messageToBody,
        },
      },
      async (request, reply) =>
        ring.fighters.messageTo(request.params.id, request.params.target, request.body.content, {
          signal: disconnectSignal(reply),
        }),
    );

    // Each bout with its origin (`user` for a user's own); `?origin=` keeps one origin, or one kind.
    app.get<{ Params: { id: string }; Querystring: { origin?: string } }>(
      "/fighters/:id/bouts",
      {
        schema: {
          ...doc("listBouts", "List a fighter's bouts (conversations)"),
          params: idParams,
          querystring: boutsQuery,
        },
      },
      async (request) => {
        const origin = request.query.origin === undefined ? undefined : originFilter(request.query.origin);
        const bouts = (await ring.fighters.bouts(request.params.id)).map(shownBout);
        return { bouts: origin === undefined ? bouts : bouts.filter((b) => originMatches(b.origin, origin)) };
      },
    );

    app.get<{ Params: { id: string } }>(
      "/bouts/:id/messages",
      { schema: { ...doc("listMessages", "List a bout's messages"), params: idParams } },
      async (request) => ({ messages: await ring.bouts.messages(request.params.id) }),
    );

    app.get<{ Params: { id: string } }>(
      "/bouts/:id/turns",
      { schema: { ...doc("listTurns", "List a bout's turns"), params: idParams } },
      async (request) => ({ turns: await ring.bouts.turns(request.params.id) }),
    );

    app.get<{ Params: { id: string } }>(
      "/fighters/:id/usage",
      { schema: { ...doc("getFighterUsage", "A fighter's usage and cost, by model"), params: idParams } },
      async (request) => ring.fighters.usage(request.params.id),
    );

    // What the fighter's next turn would send and cost, part by part: a dry run, no model call.
    app.get<{ Params: { id: string }; Querystring: { bout?: string; message?: string } }>(
      "/fighters/:id/context",
      {
        schema: {
          ...doc("getFighterContext", "What the fighter's next turn would send, part by part (a dry run)"),
          params: idParams,
          querystring: contextQuery,
        },
      },
      async (request) => {
        const { bout, message } = request.query;
        return ring.fighters.context(request.params.id, {
          ...(bout !== undefined ? { bout_id: bout } : {}),
          ...(message !== undefined ? { message } : {}),
        });
      },
    );

    app.get("/moves", { schema: doc("listMoves", "List the moves and skills") }, async () => {
      const [moves, skills] = await Promise.all([ring.moves.list(), ring.moves.skills()]);
      return { moves, skills };
    });

    app.get("/plugins", { schema: doc("listPlugins", "List the plugins") }, async () => ({
      plugins: await ring.plugins.list(),
    }));

    // Channels: each configured platform's state (`spar channel list|status`), and the tunnel's URL.
    const channelStatus = async (platform: string) => {
      const adapter = await ring.channels.resolve(platform);
      if (!adapter)
        throw new SparError(
          "NOT_FOUND",
          `no channel "${platform}" is configured (spar channel setup ${platform})`,
        );
      return adapter.status();
    };
    app.get(
      "/channels",
      { schema: doc("listChannels", "List the configured channels' state") },
      async () => ({
        channels: await Promise.all(ring.channels.configured().map(channelStatus)),
      }),
    );
    app.get<{ Params: { id: string } }>(
      "/channels/:id",
      { schema: { ...doc("getChannel", "A channel's state"), params: idParams } },
      async (request) => channelStatus(request.params.id),
    );
    app.get(
      "/tunnel",
      { schema: doc("getTunnel", "Open the tunnel (if not open) and show its URL") },
      async () => ring.tunnel.open(),
    );

    app.get("/status", { schema: doc("getStatus", "The daemon's status") }, async () => ({
      status: "ok",
      version: ring.version,
      uptime_s: Math.round((Date.now() - ring.startedAt.getTime()) / 1000),
      fighters: (await ring.fighters.list()).map(({ id, name, status }) => ({ id, name, status })),
    }));

    // `spar backup` while the daemon runs: the store's online snapshot (`Store.backup`), encrypted
    // with the database's key, written 0600 at `path` (absolute, in a folder that exists, naming no
    // file yet: an existing one is CONFLICT, never overwritten), with the manifest `spar restore`
    // needs beside it (the store writes both). 201 with `{path, manifest, bytes, schema_version}`.
    app.post<{ Body: { path: string } }>(
      "/store/backup",
      { schema: { ...doc("backupStore", "Back the store up while the daemon runs"), body: backupBody } },
      async (request, reply) => {
        const { path } = request.body;
        if (!isAbsolute(path)) {
          throw new SparError(
            "VALIDATION_FAILED",
            `path must be absolute (the daemon's own file system): ${path}`,
          );
        }
        if (!existsSync(dirname(path)) || !statSync(dirname(path)).isDirectory()) {
          throw new SparError("VALIDATION_FAILED", `the folder ${dirname(path)} does not exist`);
        }
        if (existsSync(path))
          throw new SparError("CONFLICT", `${path} already exists; it is not overwritten`);
        const snapshot = await ring.store.backup(path);
        return reply.status(201).send({ path, manifest: `${path}.manifest.json`, ...snapshot });
      },
    );

    // Open to unsigned callers, so it names the problem's kind only: the paths are for spar doctor.
    app.get(
      "/health",
      // Open to every caller, signed or not (security.ts): the document says so.
      { schema: { ...doc("getHealth", "Whether the daemon and its store are healthy"), security: [] } },
      async (_request, reply) => {
        const store = ring.store.health();
        if (store.status === "ok") return { status: "ok", version: ring.version };
        return reply.status(503).send({ status: "unhealthy", version: ring.version, store: store.status });
      },
    );
  };
}

/** Aborts when the client goes away before its answer was sent. */
export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort(cancellation("its client disconnected"));
  });
  return controller.signal;
}
