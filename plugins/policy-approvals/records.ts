/**
 * The plugin's records, in its own collections: the requests (one per asked call, kept 90 days),
 * the rules `--always` answers stored, and the chats each fighter has posted to (what makes a
 * `channel_notify` target "used before"). Answering is one transaction that moves a request from
 * `pending` to its final state, so a request is answered exactly once, on whichever node.
 *
 * A request holds everything a turn needs to go on from it (the fighter, bout, turn and call, the
 * move and its arguments, the folder and the bound files' hashes): a turn interrupted while it
 * waited is taken up again from it (resume.ts; `forCall` finds it, `released` lets it through once).
 */
import { randomUUID } from "node:crypto";
import {
  type Collection,
  canonicalJson,
  type PluginData,
  SparError,
  type TaintSource,
  type TxCollection,
} from "../../sdk/index.js";
import type { BoundFile } from "./facts.js";
import type { StoredRule } from "./policy.js";

export type RequestStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";
export const STATUSES: readonly RequestStatus[] = ["pending", "approved", "denied", "expired", "cancelled"];

export interface ApprovalRequest {
  id: string;
  status: RequestStatus;
  fighter_id: string;
  fighter: string;
  bout_id: string;
  turn_id: string;
  call_id: string;
  /** Who started the turn's bout (`user`, `channel:<platform>:<chat>` …). */
  origin: string;
  move: string;
  arguments: Record<string, unknown>;
  /** The main argument, as rules read it (facts.ts `subjectOf`). */
  subject: string;
  /** The folder the call runs in (a command's cwd), or the fighter's workspace. */
  cwd: string;
  /** The files the call would execute or overwrite, and their sha256 when asked. */
  files: BoundFile[];
  /** Why it was asked: the rule or default, and the taint. */
  why: string;
  taint?: TaintSource[];
  /** Key scopes that may answer it. */
  answerers: string[];
  created_at: string;
  expires_at: string;
  answered_by?: string;
  answered_at?: string;
  /** The operator's reason for a deny. */
  reason?: string;
  /** The rule an `--always` approval stored. */
  rule_id?: string;
  /** When the waiting turn let the approved call run (after checking its files again). */
  released_at?: string;
  /** Why an approved call was not run: its files changed after the approval. */
  stale?: string;
}

/** An answer, as the API takes it. */
export type Answer =
  | { approve: true; always?: boolean; pattern?: string; by: string }
  | { approve: false; reason?: string; by: string };

/** Who may answer (keys with these scopes; later: the originating chat's allowlisted senders). */
export const ANSWERERS = ["operator", "admin"];

const now = () => new Date().toISOString();

/** A pending request past its expiry is expired, whoever looks first. */
function overdue(request: ApprovalRequest, at = Date.now()): boolean {
  return request.status === "pending" && Date.parse(request.expires_at) <= at;
}

export function createRecords(data: PluginData) {
  const requests = data.requests as Collection<ApprovalRequest & Record<string, unknown>>;
  const rules = data.rules as Collection<StoredRule & Record<string, unknown>>;
  const targets = data.targets as Collection<{
    id: string;
    fighter_id: string;
    target: string;
    first_at: string;
  }>;
  const txRequests = (tx: Readonly<Record<string, TxCollection>>) =>
    tx.requests as TxCollection<ApprovalRequest & Record<string, unknown>>;

  /** A request as shown: a pending one past its expiry reads as expired (and is, once anyone answers). */
  const shown = (request: ApprovalRequest): ApprovalRequest =>
    overdue(request) ? { ...request, status: "expired" } : request;

  async function get(id: string): Promise<ApprovalRequest> {
    const request = await requests.get(id);
    if (!request) throw new SparError("NOT_FOUND", `no approval request ${id}`, { path: "/params/id" });
    return request;
  }

  return {
    async create(
      fields: Omit<ApprovalRequest, "id" | "status" | "answerers" | "created_at" | "expires_at">,
      timeoutS: number,
    ): Promise<ApprovalRequest> {
      const created = new Date();
      const request: ApprovalRequest = {
        id: randomUUID(),
        status: "pending",
        ...fields,
        answerers: ANSWERERS,
        created_at: created.toISOString(),
        expires_at: new Date(created.getTime() + timeoutS * 1000).toISOString(),
      };
      return requests.insert(request as ApprovalRequest & Record<string, unknown>);
    },

    /** A request refused at once (no one to ask): recorded denied, so the operator sees what was needed. */
    async refused(
      fields: Omit<ApprovalRequest, "id" | "status" | "answerers" | "created_at" | "expires_at">,
      reason: string,
    ): Promise<ApprovalRequest> {
      const at = now();
      return requests.insert({
        id: randomUUID(),
        status: "denied",
        ...fields,
        answerers: [],
        created_at: at,
        expires_at: at,
        answered_by: "unattended",
        answered_at: at,
        reason,
      } as ApprovalRequest & Record<string, unknown>);
    },

    get: async (id: string) => shown(await get(id)),
    /** The stored record as it is (the waiting turn reads it, never the shown view). */
    read: (id: string) => requests.get(id),

    /** Requests waiting for an answer now (not past their expiry): the `approvals_pending` gauge. */
    pending: async () => {
      const now = Date.now();
      const waiting = await requests.find({ where: { status: "pending" } });
      return waiting.filter((r) => Date.parse(r.expires_at) > now).length;
    },

    async list(filter: {
      status?: RequestStatus;
      limit: number;
      before?: string;
    }): Promise<ApprovalRequest[]> {
      // A pending request past its expiry is listed as expired, never as pending.
      const statuses =
        filter.status === "expired" ? ["pending", "expired"] : filter.status ? [filter.status] : undefined;
      const found = await requests.find({
        ...(statuses ? { where: { status: { in: statuses } } } : {}),
        order: { by: ["created_at"], desc: true },
        ...(filter.before ? { after: filter.before } : {}),
      });
      return found
        .map(shown)
        .filter((r) => !filter.status || r.status === filter.status)
        .slice(0, filter.limit);
    },

    /**
     * Answers a pending request, exactly once: CONFLICT when it was answered already, APPROVAL_EXPIRED
     * when its time ran out first (it is then recorded expired). An `always` approval stores its rule
     * in the same transaction.
     */
    async answer(
      id: string,
      answer: Answer,
      /** Called when this answer found the request past its expiry and recorded it expired. */
      expired: (request: ApprovalRequest) => void = () => {},
    ): Promise<{ request: ApprovalRequest; rule?: StoredRule }> {
      const outcome = await data.transaction(async (tx) => {
        const request = await txRequests(tx).get(id);
        if (!request) return { kind: "missing" as const };
        const at = now();
        if (overdue(request)) {
          txRequests(tx).put({ ...request, status: "expired", answered_by: "timeout", answered_at: at });
          return { kind: "expired" as const, request };
        }
        if (request.status !== "pending") return { kind: "taken" as const, request };
        let rule: StoredRule | undefined;
        if (answer.approve && answer.always) {
          rule = {
            id: randomUUID(),
            fighter_id: request.fighter_id,
            fighter: request.fighter,
            move: request.move,
            ...(answer.pattern !== undefined
              ? { pattern: answer.pattern }
              : { arguments: canonicalOf(request) }),
            created_at: at,
            created_by: answer.by,
            request_id: request.id,
          };
          tx.rules?.insert(rule as StoredRule & Record<string, unknown>);
        }
        const answered: ApprovalRequest = {
          ...request,
          status: answer.approve ? "approved" : "denied",
          answered_by: answer.by,
          answered_at: at,
          ...(!answer.approve && answer.reason ? { reason: answer.reason } : {}),
          ...(rule ? { rule_id: rule.id } : {}),
        };
        txRequests(tx).put(answered as ApprovalRequest & Record<string, unknown>);
        return { kind: "answered" as const, answered, rule };
      });
      if (outcome.kind === "missing")
        throw new SparError("NOT_FOUND", `no approval request ${id}`, { path: "/params/id" });
      if (outcome.kind === "expired") {
        expired({ ...outcome.request, status: "expired", answered_by: "timeout" });
        throw new SparError(
          "APPROVAL_EXPIRED",
          `approval request ${id} expired at ${outcome.request.expires_at} before it was answered: its call was not run`,
          { id },
        );
      }
      if (outcome.kind === "taken") {
        const { status, answered_by, answered_at } = outcome.request;
        if (status === "expired") {
          throw new SparError(
            "APPROVAL_EXPIRED",
            `approval request ${id} expired before it was answered: its call was not run`,
            { id },
          );
        }
        throw new SparError(
          "CONFLICT",
          `approval request ${id} was answered already: ${status}${answered_by ? ` by ${answered_by}` : ""}${answered_at ? ` at ${answered_at}` : ""}`,
          { id, status },
        );
      }
      return { request: outcome.answered, ...(outcome.rule ? { rule: outcome.rule } : {}) };
    },

    /**
     * Ends a pending request without an answer (the turn was cancelled, its time ran out): returns
     * the request as it stands once settled, which is someone's answer when one came first.
     */
    async settle(
      id: string,
      status: "expired" | "cancelled",
      by: string,
    ): Promise<{ request: ApprovalRequest; mine: boolean } | undefined> {
      return data.transaction(async (tx) => {
        const request = await txRequests(tx).get(id);
        if (!request) return undefined;
        if (request.status !== "pending") return { request, mine: false };
        const settled: ApprovalRequest = { ...request, status, answered_by: by, answered_at: now() };
        txRequests(tx).put(settled as ApprovalRequest & Record<string, unknown>);
        return { request: settled, mine: true };
      });
    },

    /**
     * The waiting turn lets the approved call run, or does not because it changed: false when it was
     * let through (or found stale) before, so a call is never run twice (a turn taken up again after
     * a stop right after the release, two nodes taking it up at once).
     */
    async released(id: string, stale?: string): Promise<boolean> {
      return data.transaction(async (tx) => {
        const request = await txRequests(tx).get(id);
        if (!request || request.released_at || request.stale) return false;
        txRequests(tx).put({ ...request, ...(stale ? { stale } : { released_at: now() }) });
        return true;
      });
    },

    /** The request a turn's call made, if it made one (the latest): what a call taken up again finds. */
    async forCall(turnId: string, callId: string): Promise<ApprovalRequest | undefined> {
      const found = await requests.find({ where: { turn_id: turnId } });
      return found.filter((r) => r.call_id === callId).at(-1);
    },

    /** The requests of a turn, oldest first. */
    forTurn: (turnId: string): Promise<ApprovalRequest[]> => requests.find({ where: { turn_id: turnId } }),

    rules: {
      async forMove(move: string): Promise<StoredRule[]> {
        return rules.find({ where: { move } });
      },
      async list(): Promise<StoredRule[]> {
        return rules.find({ order: { by: ["created_at"] } });
      },
      async remove(id: string): Promise<StoredRule> {
        const rule = await rules.get(id);
        if (!rule || !(await rules.delete(id))) {
          throw new SparError(
            "NOT_FOUND",
            `no stored approval rule ${id} (spar approvals rules list shows them)`,
            {
              path: "/params/id",
            },
          );
        }
        return rule;
      },
    },

    targets: {
      async known(fighterId: string, target: string): Promise<boolean> {
        return (await targets.get(targetKey(fighterId, target))) !== undefined;
      },
      async used(fighterId: string, target: string): Promise<void> {
        await targets.add({
          id: targetKey(fighterId, target),
          fighter_id: fighterId,
          target,
          first_at: now(),
        });
      },
    },
  };
}

export type Records = ReturnType<typeof createRecords>;

const targetKey = (fighterId: string, target: string) => `${fighterId}\n${target}`;

/** The canonical arguments a request binds (an `--always` rule without a pattern allows exactly these). */
function canonicalOf(request: ApprovalRequest): string {
  return canonicalJson(request.arguments);
}
