/**
 * What the identity plugin keeps, in its own collections (plugin.json `data`): each fighter's Creed
 * and whom it knows. Both are keyed by the fighter's name, not its id, so they outlive a kill and a
 * respawn under the same name.
 */
import {
  type Collection,
  isSparError,
  type PluginData,
  type TurnSummary,
  type TxCollection,
} from "../../sdk/index.js";

/** Something a fighter learned, held with a confidence that decays and is reinforced on repetition. */
export interface CreedObservation {
  text: string;
  /** Confidence at `last_seen`. */
  confidence: number;
  /** How often it was observed. */
  seen: number;
  last_seen: string;
}

export interface CreedCounters {
  bouts: number;
  conversations: number;
  messages: number;
}

/** A fighter's living identity, keyed by fighter name so it survives kill and respawn. */
export interface CreedDocument {
  identity: string;
  traits: string[];
  directives: string[];
  observations: CreedObservation[];
  counters: CreedCounters;
  updated_at: string;
}

/** One party a fighter has exchanged messages with, as `GET /api/v1/fighters/:id/relationships` lists it. */
export interface Relationship {
  /** The other side: a fighter's name, or a channel user (`<platform>:<user id>`). */
  with: string;
  kind: "fighter" | "user";
  exchanges: number;
  last_contact: string;
  note: string;
}

/** Fields as a document type (a type alias, which collections take; interfaces are not indexable). */
type Fields<T> = { [K in keyof T]: T[K] };
/** A Creed as stored: the document under its fighter's name (the shape GET /creed answers). */
type CreedRow = Fields<CreedDocument & { fighter: string }>;
/** A relationship as stored: under `<fighter>/<other>` (a fighter's name never holds a "/"). */
type RelationshipRow = Fields<Relationship & { id: string; fighter: string }>;

export interface IdentityRecords {
  creeds: {
    get(fighterName: string): Promise<CreedDocument | undefined>;
    put(fighterName: string, creed: CreedDocument): Promise<void>;
  };
  relationships: {
    /** The fighter's relationships, the latest contact first (at most `limit`, 10,000 by default). */
    list(fighterName: string, limit?: number): Promise<Relationship[]>;
    /** Counts one exchange with `other` (creating the record), at `at`, with a fresh note. */
    record(
      fighterName: string,
      other: { with: string; kind: Relationship["kind"] },
      note: string,
      at: string,
    ): Promise<void>;
  };
}

function creedOf(row: CreedRow): CreedDocument {
  const { identity, traits, directives, observations, counters, updated_at } = row;
  return { identity, traits, directives, observations, counters, updated_at };
}

function relationshipOf(row: RelationshipRow): Relationship {
  return {
    with: row.with,
    kind: row.kind,
    exchanges: row.exchanges,
    last_contact: row.last_contact,
    note: row.note,
  };
}

export function createIdentityRecords(data: PluginData): IdentityRecords {
  const creeds = data.creeds as unknown as Collection<CreedRow>;
  const relationships = data.relationships as unknown as Collection<RelationshipRow>;

  /** One exchange counted: read and written in one transaction, so two daemons counting at once both count. */
  async function count(row: Omit<RelationshipRow, "exchanges">): Promise<void> {
    await data.transaction(async (tx) => {
      const rows = tx.relationships as unknown as TxCollection<RelationshipRow>;
      const known = await rows.get(row.id);
      if (known) rows.put({ ...row, exchanges: known.exchanges + 1 });
      else rows.insert({ ...row, exchanges: 1 });
    });
  }

  return {
    creeds: {
      async get(fighterName) {
        const row = await creeds.get(fighterName);
        return row && creedOf(row);
      },
      async put(fighterName, creed) {
        await creeds.put({ fighter: fighterName, ...creedOf({ ...creed, fighter: fighterName }) });
      },
    },
    relationships: {
      async list(fighterName, limit) {
        const rows = await relationships.find({
          where: { fighter: fighterName },
          order: { by: ["last_contact"], desc: true },
          ...(limit === undefined ? {} : { limit }),
        });
        return rows.map(relationshipOf);
      },
      // The kind follows the latest exchange; in practice it never changes for one `other`.
      async record(fighterName, other, note, at) {
        const row = {
          id: `${fighterName}/${other.with}`,
          fighter: fighterName,
          with: other.with,
          kind: other.kind,
          last_contact: at,
          note,
        };
        try {
          await count(row);
        } catch (err) {
          // Another daemon made the record between the read and the insert: count on top of it.
          if (!isSparError(err, "CONFLICT")) throw err;
          await count(row);
        }
      },
    },
  };
}

/**
 * The turn's sender on the relationships: a fighter's message on both sides, a channel's user on the
 * fighter's. A user's note holds no message text: the Creed shows relationships in every bout's
 * prompt, and one chat's words must never reach another chat's conversation.
 */
export async function countSender(
  records: IdentityRecords,
  turn: Pick<TurnSummary, "fighter" | "sender">,
  at: string,
): Promise<void> {
  const { sender, fighter } = turn;
  if (sender?.kind === "fighter") {
    const gist = sender.content.replace(/\s+/g, " ").slice(0, 80);
    const { record } = records.relationships;
    await record(sender.name, { with: fighter.name, kind: "fighter" }, `last sent: ${gist}`, at);
    await record(fighter.name, { with: sender.name, kind: "fighter" }, `last heard: ${gist}`, at);
  } else if (sender?.kind === "user") {
    const note = `talks to you on ${sender.platform}`;
    await records.relationships.record(fighter.name, { with: sender.user, kind: "user" }, note, at);
  }
}
