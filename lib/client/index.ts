/**
 * A typed client for the Spar daemon's HTTP API, published as `spar/client`: the calls a program
 * makes most (spawn, message, stream, bouts, kill, the event stream), each request signed with an
 * Ed25519 key authorized by `spar key add` (`spar/sign`), and `request()` for every other route of
 * `GET /api/v1/openapi.json`. Errors are SparErrors with the daemon's stable code.
 */
import type { KeyObject } from "node:crypto";
import { SparError } from "../../sdk/errors.js";
import type { ApprovalNotice, FighterMessageResult, SpawnRequest } from "../../sdk/services.js";
import type { BoutRecord, FighterRecord, StoredMessage } from "../../sdk/types.js";
import { signedHeaders } from "../sign.js";
import { errorFromBody } from "./errors.js";
import { type EventFollower, type FollowOptions, followEvents } from "./events.js";
import { readEvents } from "./sse.js";

export { errorFromBody } from "./errors.js";
export type { EventFollower, FollowOptions } from "./events.js";

/** Where the daemon is and how to sign for it. */
export interface ClientOptions {
  /** The API's address; `http://127.0.0.1:6660` (the default `api_listen`) when left out. */
  url?: string;
  /**
   * The name the key was authorized under (`spar key add <name> <public key>`). Without a key the
   * requests go unsigned, which only a daemon on the same machine accepts, and only while
   * `[auth] allow_unsigned_loopback` is on.
   */
  keyId?: string;
  /** The Ed25519 private key: PEM (PKCS #8) text or a KeyObject. */
  privateKey?: string | Buffer | KeyObject;
  /** Headers sent with every request (a `traceparent`, say). */
  headers?: Record<string, string>;
}

/** What one call may add. */
export interface CallOptions {
  headers?: Record<string, string>;
  /** Abandons the request; for a message, the daemon cancels its turn. */
  signal?: AbortSignal;
}

/** How a message is sent (the body of `POST /api/v1/fighters/{id}/message`, and its headers). */
export interface SendOptions extends CallOptions {
  /** Continue this bout; by default the fighter's latest. */
  bout_id?: string;
  /** `"new"` starts a fresh bout. */
  bout?: "new";
  /** A retry with the same key (within 24 h) gets the first attempt's reply instead of a second turn. */
  idempotencyKey?: string;
}

/** A bout as listed: its origin always named (`user` for a user's own). */
export type BoutListing = BoutRecord & { origin: string };

/** What a streamed message yields, in order: text as it comes, operators asked, then the reply. */
export type ReplyEvent =
  | { type: "delta"; text: string }
  | { type: "approval"; approval: ApprovalNotice }
  | { type: "reply"; result: FighterMessageResult };

export interface SparClient {
  /** `GET /api/v1/health`: answers without a signature. */
  health(options?: CallOptions): Promise<{ status: string; version: string }>;
  fighters: {
    list(options?: CallOptions): Promise<FighterRecord[]>;
    /** By id or name. */
    get(fighter: string, options?: CallOptions): Promise<FighterRecord>;
    /** From a template (`{template: "coder", name: "ada"}`) or a manifest (`{manifest: {…}}`). */
    spawn(request: SpawnRequest, options?: CallOptions): Promise<FighterRecord>;
    kill(fighter: string, options?: CallOptions): Promise<void>;
  };
  /** Sends a message and waits for the whole reply. */
  message(fighter: string, text: string, options?: SendOptions): Promise<FighterMessageResult>;
  /** Sends a message and yields the reply as the model writes it; the last event is the reply. */
  stream(fighter: string, text: string, options?: SendOptions): AsyncGenerator<ReplyEvent>;
  /** Cancels the fighter's turn in progress (and its queued ones). */
  cancel(fighter: string, options?: CallOptions): Promise<{ cancelled: true }>;
  /** The fighter's bouts, newest activity first; `origin` keeps one origin or one kind (`channel`). */
  bouts(fighter: string, options?: CallOptions & { origin?: string }): Promise<BoutListing[]>;
  /** A bout's messages in order, tool calls and their results included. */
  messages(bout: string, options?: CallOptions): Promise<StoredMessage[]>;
  /**
   * Follows the event stream over the WebSocket (`/api/v1/ws`), from `since` if given, and again
   * from the last event seen after a dropped connection, until `close()`.
   */
  events(options?: FollowOptions): EventFollower;
  /** Any route: JSON in, JSON out (undefined for 204). */
  request<T = unknown>(method: string, path: string, body?: unknown, options?: CallOptions): Promise<T>;
}

/**
 * A client for one daemon.
 *
 * @example
 * import { readFileSync } from "node:fs";
 * import { createClient } from "spar/client";
 *
 * const spar = createClient({ url: "http://127.0.0.1:6660", keyId: "laptop", privateKey: readFileSync("laptop.key") });
 * const ada = await spar.fighters.spawn({ template: "coder", name: "ada" });
 * for await (const event of spar.stream(ada.id, "hello")) {
 *   if (event.type === "delta") process.stdout.write(event.text);
 * }
 */
export function createClient(options: ClientOptions = {}): SparClient {
  const base = (options.url ?? "http://127.0.0.1:6660").replace(/\/+$/, "");
  if ((options.keyId === undefined) !== (options.privateKey === undefined)) {
    throw new SparError("VALIDATION_FAILED", "give both keyId and privateKey, or neither (unsigned)");
  }
  const send = async (method: string, path: string, body: unknown, call: CallOptions = {}) => {
    const url = `${base}${path}`;
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { ...options.headers, ...call.headers };
    if (text !== undefined) headers["content-type"] = "application/json";
    if (options.keyId !== undefined && options.privateKey !== undefined) {
      Object.assign(
        headers,
        signedHeaders({ method, url, body: text, keyId: options.keyId, privateKey: options.privateKey }),
      );
    }
    let response: Response;
    try {
      response = await fetch(url, { method, headers, body: text, signal: call.signal });
    } catch (err) {
      if (call.signal?.aborted) throw err;
      throw new SparError("DAEMON_UNREACHABLE", `Spar does not answer at ${base}: ${(err as Error).message}`);
    }
    if (!response.ok) throw errorFromBody(response.status, await response.text());
    return response;
  };
  const request = async <T>(method: string, path: string, body?: unknown, call?: CallOptions) => {
    const text = await (await send(method, path, body, call)).text();
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const id = encodeURIComponent;
  const messageCall = (text: string, options: SendOptions) => {
    const { bout_id, bout, idempotencyKey, headers, signal } = options;
    const body = { message: text, ...(bout_id ? { bout_id } : {}), ...(bout ? { bout } : {}) };
    const extra: Record<string, string> = { ...headers };
    if (idempotencyKey) extra["idempotency-key"] = idempotencyKey;
    return { body, call: { headers: extra, signal } };
  };
  const client: SparClient = {
    health: (call) => request("GET", "/api/v1/health", undefined, call),
    fighters: {
      list: async (call) =>
        (await request<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters", undefined, call)).fighters,
      get: (fighter, call) => request("GET", `/api/v1/fighters/${id(fighter)}`, undefined, call),
      spawn: (spawn, call) => request("POST", "/api/v1/fighters", spawn, call),
      kill: async (fighter, call) => {
        await request("DELETE", `/api/v1/fighters/${id(fighter)}`, undefined, call);
      },
    },
    message: (fighter, text, sendOptions = {}) => {
      const { body, call } = messageCall(text, sendOptions);
      return request("POST", `/api/v1/fighters/${id(fighter)}/message`, body, call);
    },
    async *stream(fighter, text, sendOptions = {}) {
      const { body, call } = messageCall(text, sendOptions);
      call.headers.accept = "text/event-stream";
      const response = await send("POST", `/api/v1/fighters/${id(fighter)}/message`, body, call);
      if (!response.body) return;
      for await (const { event, data } of readEvents(response.body as unknown as AsyncIterable<Uint8Array>)) {
        if (event === "delta") yield { type: "delta", text: (data as { text: string }).text };
        else if (event === "approval") yield { type: "approval", approval: data as ApprovalNotice };
        else if (event === "reply") yield { type: "reply", result: data as FighterMessageResult };
        else if (event === "error") throw errorFromBody(500, JSON.stringify(data));
      }
    },
    cancel: (fighter, call) => request("POST", `/api/v1/fighters/${id(fighter)}/cancel`, undefined, call),
    bouts: async (fighter, call = {}) => {
      const query = call.origin === undefined ? "" : `?origin=${id(call.origin)}`;
      const path = `/api/v1/fighters/${id(fighter)}/bouts${query}`;
      return (await request<{ bouts: BoutListing[] }>("GET", path, undefined, call)).bouts;
    },
    messages: async (bout, call) =>
      (
        await request<{ messages: StoredMessage[] }>(
          "GET",
          `/api/v1/bouts/${id(bout)}/messages`,
          undefined,
          call,
        )
      ).messages,
    events: (follow = {}) =>
      followEvents(
        base,
        async () => {
          const { ticket } = await request<{ ticket: string }>("POST", "/api/v1/ws/ticket");
          return ticket;
        },
        follow,
      ),
    request,
  };
  return client;
}
