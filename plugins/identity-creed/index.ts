/**
 * The Creed (spec: "every conversation strengthens its Creed"), as taps on the kernel's turn hooks:
 * `turn.prepare` renders it into the system prompt, `turn.end` moves its counters and counts the
 * turn's sender (another fighter, a channel's user) on the fighter's relationships, `turn.after`
 * asks the model for lasting observations after a substantial exchange, and API routes read and
 * edit it and list the relationships. Both live in the plugin's own collections (records.ts), under
 * the fighter's name, so they survive a kill and a respawn.
 */

import {
  definePlugin,
  type FighterRow,
  type RingServices,
  type RouteRequest,
  SparError,
} from "../../sdk/index.js";
import { FREE_OBJECT, openAnswer } from "../../sdk/kits/http.js";
import {
  type CreedConfig,
  countConversation,
  initialCreed,
  isSubstantial,
  mergeObservations,
  parseObservations,
  REFLECTION_SYSTEM,
  reflectionPrompt,
  renderCreedCore,
  renderCreedRecent,
} from "./creed.js";
import { type CreedDocument, countSender, createIdentityRecords } from "./records.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    "creed.updated": { fighter_id: string; name: string; reason: "conversation" | "reflection" | "edit" };
  }
}

/** Flushed facts a fighter's next reflection reads, at most. */
const MAX_FLUSHED = 20;

const editBody = {
  type: "object",
  additionalProperties: false,
  required: ["identity", "traits", "directives"],
  properties: {
    identity: { type: "string", maxLength: 4000 },
    traits: { type: "array", maxItems: 50, items: { type: "string", minLength: 1, maxLength: 200 } },
    directives: { type: "array", maxItems: 50, items: { type: "string", minLength: 1, maxLength: 500 } },
  },
};

/** How many relationships, the latest, the prompt shows. */
const SHOWN_RELATIONSHIPS = 5;

/** Params of the fighter routes, as the Arena's own fighter routes check them. */
const fighterParams = {
  type: "object",
  required: ["id"],
  properties: { id: { type: "string", minLength: 1, maxLength: 200 } },
};

export default definePlugin<{ creed: CreedConfig }>({
  id: "identity-creed",
  apply({ hooks, ring, events, config, data }, { creed: settings }) {
    const records = createIdentityRecords(data);
    const now = () => new Date().toISOString();
    const creedOf = async (fighter: FighterRow): Promise<CreedDocument> =>
      (await records.creeds.get(fighter.name)) ?? initialCreed(fighter.manifest, now());
    const save = async (
      fighter: FighterRow,
      creed: CreedDocument,
      reason: "conversation" | "reflection" | "edit",
    ) => {
      await records.creeds.put(fighter.name, creed);
      events.publish({ kind: "creed.updated", fighter_id: fighter.id, name: fighter.name, reason });
    };

    hooks.turn.prepare.tap(async (prompt, { fighter }) => {
      const [creed, relationships] = await Promise.all([
        creedOf(fighter),
        records.relationships.list(fighter.name, SHOWN_RELATIONSHIPS),
      ]);
      // The stable core goes with the system prompt; the counters and relationships after it.
      const recent = renderCreedRecent(creed, relationships);
      return {
        ...prompt,
        system: `${prompt.system}\n\n${renderCreedCore(fighter.name, creed)}`,
        ...(recent
          ? { volatile: `${prompt.volatile ?? ""}\n\n## Creed of ${fighter.name}, lately\n${recent}` }
          : {}),
      };
    });

    hooks.turn.end.tap(async (turn) => {
      const counted = countConversation(
        await creedOf(turn.fighter),
        { new_bout: turn.new_bout, messages: turn.new_messages.length },
        now(),
      );
      await save(turn.fighter, counted, "conversation");
      await countSender(records, turn, now());
    });

    // What a compaction's flush saved (moves-memory taps first): read by the fighter's next reflection.
    const flushed = new Map<string, string[]>();
    hooks.compaction.flush.tap(
      (facts, input) => {
        if (facts.length === 0) return facts;
        const held = flushed.get(input.fighter.id) ?? [];
        flushed.set(
          input.fighter.id,
          [...held, ...facts.map((f) => `${f.key}: ${f.value}`)].slice(-MAX_FLUSHED),
        );
        return facts;
      },
      { phase: "late" },
    );

    hooks.turn.after.tap(async (turn) => {
      const user = turn.new_messages.find((m) => m.role === "user")?.content ?? "";
      const reply = turn.new_messages.findLast((m) => m.role === "assistant")?.content ?? "";
      const saved = flushed.get(turn.fighter.id) ?? [];
      if (!settings.reflect || (saved.length === 0 && !isSubstantial(user, reply, settings))) return;
      flushed.delete(turn.fighter.id);
      const answer = await ring.llm.complete(
        turn.model,
        {
          system: REFLECTION_SYSTEM,
          messages: [{ role: "user", content: reflectionPrompt(user, reply, saved) }],
          tools: [],
        },
        turn,
      );
      const observations = parseObservations(answer.text);
      if (observations.length === 0) return;
      const merged = mergeObservations(
        await creedOf(turn.fighter),
        observations,
        now(),
        config.memory.decay,
        settings.max_observations,
      );
      await save(turn.fighter, merged, "reflection");
    });

    hooks.arena.routes.tap((routes) => {
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/fighters/:id/relationships",
        operationId: "listRelationships",
        summary: "What a fighter's Creed knows of those it talks with",
        response: { "200": openAnswer({ relationships: { type: "array", items: FREE_OBJECT } }) },
        params: fighterParams,
        handler: async (request) => {
          const fighter = await ring.fighters.get(request.params.id ?? "");
          return { body: { relationships: await records.relationships.list(fighter.name) } };
        },
      });
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/fighters/:id/creed",
        operationId: "getCreed",
        summary: "A fighter's Creed: identity, traits, directives and what it learned",
        response: { "200": openAnswer({ fighter: { type: "string" } }) },
        handler: async (request) => ({ body: await view(ring, request, creedOf) }),
      });
      routes.add({
        listener: "api",
        method: "PUT",
        path: "/api/v1/fighters/:id/creed",
        operationId: "editCreed",
        summary: "Replace a fighter's identity, traits and directives",
        response: { "200": openAnswer({ fighter: { type: "string" } }) },
        body: editBody,
        // Identity, traits and directives are replaced; what was learned and the counters stay.
        handler: async (request) => {
          const fighter = await rowOf(ring, request);
          const edit = request.body as Pick<CreedDocument, "identity" | "traits" | "directives">;
          const creed = { ...(await creedOf(fighter)), ...edit, updated_at: now() };
          await save(fighter, creed, "edit");
          return { body: { fighter: fighter.name, ...creed } };
        },
      });
    });
  },
});

async function rowOf(ring: RingServices, request: RouteRequest): Promise<FighterRow> {
  const id = request.params.id ?? "";
  const record = await ring.fighters.get(id);
  if (!record) throw new SparError("FIGHTER_NOT_FOUND", `no fighter with id or name "${id}"`);
  return {
    id: record.id,
    name: record.name,
    created_at: record.created_at,
    manifest: await ring.fighters.manifest(id),
  };
}

async function view(
  ring: RingServices,
  request: RouteRequest,
  creedOf: (f: FighterRow) => Promise<CreedDocument>,
) {
  const fighter = await rowOf(ring, request);
  return { fighter: fighter.name, ...(await creedOf(fighter)) };
}
