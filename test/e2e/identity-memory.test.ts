import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreedDocument, Relationship } from "../../plugins/identity-creed/records.js";
import type { FighterMessageResult, FighterRecord, StoredMessage } from "../../sdk/index.js";

/** What the identity plugin's GET /creed answers. */
type CreedView = CreedDocument & { fighter: string };

import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const LEARNED = "The user is planning a trip to Lisbon in May";

/**
 * Identity and memory end to end: the Creed learning from a conversation and showing in the next
 * prompt, surviving a respawn; relationships; memory and knowledge moves; compaction of a long bout.
 */
describe("identity and memory end to end", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[memory.compaction]\nkeep_recent = 4\n");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  /** Reflection and summary requests get their scripted answers; everything else the usual echo. */
  function scriptModel(): void {
    fake.reset();
    fake.setDefault((body) => {
      const system = body.messages.find((m) => m.role === "system")?.content;
      const text = typeof system === "string" ? system : "";
      if (text.startsWith("You keep the Creed")) return { text: `- ${LEARNED}` };
      if (text.startsWith("You summarize"))
        return { text: `SUMMARY: ${body.messages.length} message(s) folded` };
      const last = body.messages.at(-1);
      const content = typeof last?.content === "string" ? last.content : "";
      return { text: `${last?.role === "tool" ? "done" : "echo"}: ${content}` };
    });
  }

  const send = (fighter: string, message: string) =>
    daemon.request<FighterMessageResult>("POST", `/api/v1/fighters/${fighter}/message`, { message });
  const spawn = (manifest: Record<string, unknown>) =>
    daemon.request<FighterRecord>("POST", "/api/v1/fighters", { manifest });
  const lastChat = () =>
    fake.requests
      .filter((r) => {
        const system = r.body?.messages.find((m) => m.role === "system")?.content;
        return (
          typeof system === "string" && !system.startsWith("You keep") && !system.startsWith("You summarize")
        );
      })
      .at(-1)?.body?.messages ?? [];
  const lastSystemPrompt = () => {
    const system = lastChat()[0];
    return system?.role === "system" && typeof system.content === "string" ? system.content : "";
  };
  /** Spar's per-turn context: the system message after the history, before the turn's message. */
  const lastContext = () =>
    lastChat()
      .slice(1)
      .filter((m) => m.role === "system")
      .map((m) => String(m.content))
      .join("\n");

  async function creedWhen(fighter: string, done: (c: CreedView) => boolean): Promise<CreedView> {
    for (let i = 0; i < 100; i++) {
      const { body } = await daemon.request<CreedView>("GET", `/api/v1/fighters/${fighter}/creed`);
      if (done(body)) return body;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the Creed of ${fighter} never got there`);
  }

  it("learns from a substantial conversation and shows the Creed in the next prompt", async () => {
    scriptModel();
    await spawn({
      name: "sage",
      description: "A patient travel guide.",
      system_prompt: "You are Sage.",
      capabilities: [{ type: "memory" }],
    });
    const before = await daemon.request<CreedView>("GET", "/api/v1/fighters/sage/creed");
    expect(before.body).toMatchObject({
      fighter: "sage",
      identity: "A patient travel guide.",
      observations: [],
    });

    const long = `I am planning a trip to Lisbon in May with two friends. ${"We like food, old trams and long walks. ".repeat(6)}`;
    expect((await send("sage", long)).status).toBe(200);
    const learned = await creedWhen("sage", (c) => c.observations.length > 0);
    expect(learned.observations).toEqual([
      expect.objectContaining({ text: LEARNED, confidence: 0.5, seen: 1 }),
    ]);
    expect(learned.counters).toEqual({ bouts: 1, conversations: 1, messages: 2 });

    await send("sage", "hello");
    expect(lastSystemPrompt()).toContain("You are Sage.");
    expect(lastSystemPrompt()).toContain(`Learned (0.50): ${LEARNED}`);
    expect(lastContext()).toContain("History: 1 conversation(s), 2 message(s), 1 bout(s)");
    expect(lastSystemPrompt()).not.toContain("History:");
    // A one-line exchange is not worth a reflection call.
    expect(fake.requests.filter((r) => JSON.stringify(r.body).includes("You keep the Creed"))).toHaveLength(
      1,
    );
  });

  it("puts an edited identity into the next prompt, and refuses a bad edit", async () => {
    const edit = {
      identity: "Sage, who plans trips by train.",
      traits: ["warm", "precise"],
      directives: ["Give distances in km"],
    };
    const put = await daemon.request<CreedView>("PUT", "/api/v1/fighters/sage/creed", edit);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ ...edit, observations: [expect.objectContaining({ text: LEARNED })] });
    scriptModel();
    await send("sage", "what next?");
    expect(lastSystemPrompt()).toContain("Identity: Sage, who plans trips by train.");
    expect(lastSystemPrompt()).toContain("Traits: warm; precise");
    expect(lastSystemPrompt()).toContain("Directive: Give distances in km");

    for (const bad of [{ ...edit, traits: "warm" }, { ...edit, mood: "sunny" }, { identity: "only this" }]) {
      const refused = await daemon.request<{ error: { code: string } }>(
        "PUT",
        "/api/v1/fighters/sage/creed",
        bad,
      );
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe("VALIDATION_FAILED");
    }
  });

  it("keeps the Creed of a fighter killed and spawned again under the same name", async () => {
    const old = await daemon.request<FighterRecord>("GET", "/api/v1/fighters/sage");
    expect((await daemon.request("DELETE", `/api/v1/fighters/${old.body.id}`)).status).toBe(204);
    const again = await spawn({ name: "sage", description: "Reborn.", system_prompt: "You are Sage again." });
    expect(again.body.id).not.toBe(old.body.id);
    const creed = await daemon.request<CreedView>("GET", "/api/v1/fighters/sage/creed");
    expect(creed.body.identity).toBe("Sage, who plans trips by train.");
    expect(creed.body.observations.map((o) => o.text)).toEqual([LEARNED]);
    expect(creed.body.counters.conversations).toBeGreaterThanOrEqual(3);
  });

  it("records fighter-to-fighter exchanges on both sides", async () => {
    scriptModel();
    await spawn({ name: "oracle2", description: "d", system_prompt: "p" });
    await daemon.request("POST", "/api/v1/fighters/sage/message-to/oracle2", {
      content: "Which month is best for Lisbon?",
    });
    await daemon.request("POST", "/api/v1/fighters/sage/message-to/oracle2", { content: "And for Porto?" });
    const sage = await daemon.request<{ relationships: Relationship[] }>(
      "GET",
      "/api/v1/fighters/sage/relationships",
    );
    expect(sage.body.relationships).toEqual([
      expect.objectContaining({
        with: "oracle2",
        kind: "fighter",
        exchanges: 2,
        note: "last sent: And for Porto?",
      }),
    ]);
    const oracle = await daemon.request<{ relationships: Relationship[] }>(
      "GET",
      "/api/v1/fighters/oracle2/relationships",
    );
    expect(oracle.body.relationships).toEqual([
      expect.objectContaining({ with: "sage", exchanges: 2, note: "last heard: And for Porto?" }),
    ]);
    await send("oracle2", "who have you talked to?");
    expect(lastContext()).toMatch(
      /Knows fighter sage: 2 exchange\(s\), last \d{4}-\d\d-\d\d \(last heard: And for Porto\?\)/,
    );
  });

  it("recalls what memory_store stored, ranked, and refuses without the grant", async () => {
    scriptModel();
    fake.enqueue(
      { tool_calls: [{ name: "memory_store", arguments: { key: "hotel", value: "Casa do Tejo, Alfama" } }] },
      { text: "stored" },
      { tool_calls: [{ name: "memory_recall", arguments: { query: "which hotel in Alfama" } }] },
    );
    await send("sage", "remember the hotel");
    const recall = await send("sage", "which hotel?");
    expect(recall.body.tool_calls).toEqual([{ name: "memory_recall", ok: true }]);
    const found = JSON.parse(recall.body.response.replace(/^done: /, "")) as {
      memories: { key: string; score: number }[];
    };
    expect(found.memories[0]).toMatchObject({ key: "hotel", value: "Casa do Tejo, Alfama" });
    expect(found.memories[0]?.score).toBeGreaterThan(1);
  });

  it("says in spar doctor that recall is by words only without an embedding model", async () => {
    const doctor = await daemon.cli(["doctor", "--json"]);
    expect(JSON.parse(doctor.stdout).checks).toContainEqual(
      expect.objectContaining({
        name: "memory",
        ok: true,
        detail: expect.stringMatching(/^recall by words only/),
      }),
    );
  });

  it("adds to and queries the knowledge graph, and refuses without the grant", async () => {
    await spawn({
      name: "cartographer",
      description: "d",
      system_prompt: "p",
      capabilities: [{ type: "knowledge_graph" }],
    });
    scriptModel();
    fake.enqueue(
      {
        tool_calls: [
          {
            name: "kg_add",
            arguments: {
              entities: [
                { name: "Lisbon", type: "city" },
                { name: "Portugal", type: "country" },
                { name: "lisbon", type: "City" },
              ],
              relations: [
                { from: "Lisbon", to: "Portugal", type: "capital_of" },
                { from: "Lisbon", to: "Tagus", type: "lies_on" },
              ],
            },
          },
        ],
      },
      { text: "added" },
      { tool_calls: [{ name: "kg_query", arguments: { query: "Lisbon" } }] },
    );
    const added = await send("cartographer", "map Lisbon");
    expect(added.body.tool_calls).toEqual([{ name: "kg_add", ok: true }]);
    expect(fake.requests[1]?.body?.messages.at(-1)?.content).toBe(
      JSON.stringify({ entities_added: 3, entities_merged: 1, relations_added: 2 }),
    );
    const queried = await send("cartographer", "what do you know about Lisbon?");
    const result = JSON.parse(queried.body.response.replace(/^done: /, "")) as {
      entities: { name: string; type: string; relations: { from: string; to: string; type: string }[] }[];
    };
    expect(result.entities[0]).toMatchObject({ name: "Lisbon", type: "city" });
    expect(result.entities[0]?.relations).toEqual(
      expect.arrayContaining([
        { from: "Lisbon", to: "Portugal", type: "capital_of" },
        { from: "Lisbon", to: "Tagus", type: "lies_on" },
      ]),
    );

    // sage holds only `memory`: both kinds of move are refused to it, by capability.
    scriptModel();
    fake.enqueue({ tool_calls: [{ name: "kg_query", arguments: { query: "Lisbon" } }] });
    const refused = await send("sage", "query the graph");
    expect(refused.body.tool_calls).toEqual([{ name: "kg_query", ok: false }]);
    expect(String(fake.requests[1]?.body?.messages.at(-1)?.content)).toContain("CAPABILITY_DENIED");
    await spawn({
      name: "amnesiac",
      description: "d",
      system_prompt: "p",
      capabilities: [{ type: "knowledge_graph" }],
    });
    scriptModel();
    fake.enqueue({ tool_calls: [{ name: "memory_recall", arguments: { query: "anything" } }] });
    const noMemory = await send("amnesiac", "recall");
    expect(noMemory.body.tool_calls).toEqual([{ name: "memory_recall", ok: false }]);
    expect(String(fake.requests[1]?.body?.messages.at(-1)?.content)).toContain("CAPABILITY_DENIED");
  });

  it("summarizes a long bout for a small context window and keeps every original message", async () => {
    await spawn({
      name: "chatty",
      description: "d",
      system_prompt: "You chat.",
      model: { provider: "openai", model: "fake-model", base_url: fake.url, context_window: 400 },
    });
    scriptModel();
    for (let turn = 1; turn <= 12; turn++) {
      const reply = await send(
        "chatty",
        `Turn ${turn}: tell me one more thing about the history of Lisbon's trams.`,
      );
      expect(reply.status).toBe(200);
    }
    const summaries = fake.requests.filter((r) => JSON.stringify(r.body).includes("You summarize"));
    expect(summaries.length).toBeGreaterThanOrEqual(1);

    await send("chatty", "and the last one?");
    const last = fake.requests.at(-1)?.body?.messages ?? [];
    const context = last.slice(1).filter((m) => m.role === "system");
    expect(context).toHaveLength(1);
    expect(context[0]?.content).toContain("## Earlier in this conversation (summary)\nSUMMARY:");
    // After the history, just before the new message.
    expect(last.at(-2)).toBe(context[0]);
    expect(last.at(-1)).toMatchObject({ role: "user", content: "and the last one?" });
    const carried = last.filter((m) => m.role !== "system");
    // The summary stands in for the old turns: at most keep_recent earlier messages plus the new one.
    expect(carried.length).toBeLessThanOrEqual(5);
    expect(carried.some((m) => String(m.content).includes("Turn 1:"))).toBe(false);

    const bouts = await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/chatty/bouts");
    const messages = await daemon.request<{ messages: StoredMessage[] }>(
      "GET",
      `/api/v1/bouts/${bouts.body.bouts[0]?.id}/messages`,
    );
    expect(messages.body.messages).toHaveLength(26);
    expect(messages.body.messages[0]).toMatchObject({ role: "user", compacted: true });
    expect(messages.body.messages[0]?.content).toContain("Turn 1:");
    expect(messages.body.messages.filter((m) => m.compacted).length).toBeGreaterThanOrEqual(10);
    expect(messages.body.messages.at(-1)?.compacted).toBeUndefined();
  });
});
