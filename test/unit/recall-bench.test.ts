// The recall benchmark's pieces (bench/recall/): the dataset is deterministic and honest (answers
// only where facts are stated), the bag-of-concepts embedder puts a paraphrased question nearer its
// fact than the distractors, the extractor reads first-person facts, and the metrics count right.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { cosine, embed } from "../../bench/recall/concepts.mjs";
import { extractFacts, rememberedFacts } from "../../bench/recall/extractor.mjs";
import { generateDataset } from "../../bench/recall/generator.mjs";
import { runRecallBench } from "../../bench/recall/harness.mjs";
import { aggregate, holds, scoreQuestion } from "../../bench/recall/metrics.mjs";
import { openaiEmbedder, parseEmbeddingsFlag } from "../../bench/recall/openai-embedder.mjs";
import { createWordsOld } from "../../bench/recall/words-old.mjs";

type Msg = { kind: string; role?: string; text?: string };
const userTexts = (events: Msg[]) =>
  events.filter((e) => e.kind === "message" && e.role === "user").map((e) => e.text ?? "");

describe("recall bench dataset", () => {
  it("is the same for the same seed and sizes, and differs for another seed", () => {
    const a = JSON.stringify(generateDataset({ seed: 7, users: 2, turns: 120 }));
    expect(JSON.stringify(generateDataset({ seed: 7, users: 2, turns: 120 }))).toBe(a);
    expect(JSON.stringify(generateDataset({ seed: 8, users: 2, turns: 120 }))).not.toBe(a);
  });

  it("gives each user ~300 distractor exchanges and 50 questions of the four types by default", () => {
    const data = generateDataset();
    const user = data.users[0];
    if (!user) throw new Error("no user");
    const facts = user.facts.length + user.facts.filter((f) => f.stale.length > 0).length;
    expect(userTexts(user.events).length - facts).toBe(300);
    expect(user.questions).toHaveLength(50);
    const types: Record<string, number> = {};
    for (const q of user.questions) types[q.type] = (types[q.type] ?? 0) + 1;
    expect(types).toEqual({
      plain: 15,
      paraphrased: 15,
      updated: 10,
      compaction: 10,
    });
    expect(user.events.filter((e) => e.kind === "compact")).toHaveLength(3);
  });

  it("states each answer only where its fact is said (no distractor holds one)", () => {
    for (const user of generateDataset({ seed: 3, users: 3 }).users) {
      const texts = userTexts(user.events);
      for (const fact of user.facts) {
        expect(texts.filter((t) => holds(t, fact.match))).toHaveLength(1);
        for (const old of fact.stale) expect(texts.filter((t) => holds(t, old))).toHaveLength(1);
      }
    }
  });

  it("puts before-compaction facts in folded messages and the others after every fold", () => {
    for (const user of generateDataset({ seed: 5, users: 2 }).users) {
      for (const fact of user.facts) {
        expect(fact.said?.folded).toBe(fact.type === "compaction");
      }
    }
  });
});

describe("bag-of-concepts embedder", () => {
  it("is deterministic and normalised", () => {
    const v = embed("My sister Ada moved to Lisbon last spring.");
    expect(v).toHaveLength(256);
    expect(embed("My sister Ada moved to Lisbon last spring.")).toEqual(v);
    expect(Math.hypot(...v)).toBeCloseTo(1, 9);
    expect(embed("...").every((x) => x === 0)).toBe(true);
    expect(embed("hello there", 64)).toHaveLength(64);
  });

  it("puts a paraphrased question nearer its fact than the distractors, on a sample", () => {
    let wins = 0;
    let pairs = 0;
    for (const user of generateDataset({ seed: 11, users: 2 }).users) {
      const texts = userTexts(user.events);
      const distractors = texts.filter(
        (t) => !user.facts.some((f) => holds(t, f.match) || f.stale.some((s) => holds(t, s))),
      );
      for (const q of user.questions.filter((x) => x.wording === "para")) {
        const fact = texts.find((t) => holds(t, q.answer));
        if (!fact) throw new Error(`no statement of ${q.answer}`);
        const qv = embed(q.text);
        const near = cosine(qv, embed(fact));
        for (const d of distractors.slice(0, 120)) {
          pairs += 1;
          if (near > cosine(qv, embed(d))) wins += 1;
        }
      }
    }
    expect(wins / pairs).toBeGreaterThan(0.9);
    const q = embed("Where does my sister live?");
    expect(cosine(q, embed("My sister Ada moved to Lisbon last spring."))).toBeGreaterThan(
      cosine(q, embed("My sister loves painting.")),
    );
  });
});

describe("flush extractor", () => {
  it("notes first-person facts and commitments from user lines only", () => {
    const notes = extractFacts(
      [
        "User: My sister Ada moved to Lisbon last spring.",
        "Assistant: My favourite city is Paris.",
        "User: I'm so tired today.",
        "User: I will send the report to Noor by Friday.",
        "User: What's the weather like?",
        "User: Our cat's vet is Dr. Szabo.",
      ].join("\n"),
    );
    expect(notes).toEqual([
      { key: "sister", value: "My sister Ada moved to Lisbon last spring" },
      { key: "todo send report", value: "I will send the report to Noor by Friday" },
      { key: "cat vet", value: "Our cat's vet is Dr. Szabo" },
    ]);
  });

  it("has the model store a fact by itself only when asked to remember it", () => {
    expect(rememberedFacts("Remember that our dog is called Biscuit.")).toEqual([
      { key: "dog", value: "our dog is called Biscuit" },
    ]);
    expect(rememberedFacts("Our dog is called Biscuit.")).toEqual([]);
  });
});

describe("recall metrics", () => {
  const q = { answer: "Porto", stale: ["Lisbon"] };

  it("matches answers as whole words", () => {
    expect(holds("Ada lives in Adelaide", "Ada")).toBe(true);
    expect(holds("She lives in Adelaide", "Ada")).toBe(false);
    expect(holds("call 555-0142 now", "555-0142")).toBe(true);
  });

  it("counts a hit in the top 5 and support only when no stale answer ranks above the current one", () => {
    expect(scoreQuestion(["x", "moved to Porto", "was in Lisbon"], q)).toMatchObject({
      hit: true,
      supported: true,
      rank: 2,
      staleShown: true,
    });
    expect(scoreQuestion(["was in Lisbon", "moved to Porto"], q)).toMatchObject({
      hit: true,
      supported: false,
    });
    expect(scoreQuestion(["from Lisbon to Porto", "Lisbon"], q)).toMatchObject({
      hit: true,
      supported: true,
    });
    expect(scoreQuestion(["a", "b", "c", "d", "e", "Porto"], q)).toMatchObject({ hit: false, rank: 0 });
  });

  it("aggregates rates overall and by type", () => {
    const out = aggregate([
      { type: "plain", hit: true, supported: true, rank: 1, staleShown: false },
      { type: "plain", hit: false, supported: false, rank: 0, staleShown: false },
      { type: "updated", hit: true, supported: false, rank: 2, staleShown: true },
    ]);
    expect(out.overall).toMatchObject({ n: 3, recall_at_5: 2 / 3, answer_support: 1 / 3, mrr: 0.5 });
    expect(out.by_type.plain).toMatchObject({ n: 2, recall_at_5: 0.5 });
    expect(out.by_type.updated).toMatchObject({ n: 1, answer_support: 0, stale_shown: 1 });
    expect(out.by_type.compaction).toMatchObject({ n: 0, recall_at_5: null });
  });
});

describe("words-old (main's recall before issue 33)", () => {
  it("finds a memory by a shared word, not by a paraphrase", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const old = createWordsOld({ now: () => now });
    await old.storeMemory("sister", "My sister Ada moved to Lisbon");
    now += 86_400_000;
    expect(await old.recall("Where did my sister move?", 5)).toEqual([
      "sister: My sister Ada moved to Lisbon",
    ]);
    expect(await old.recall("Which town is my sibling based in?", 5)).toEqual([]);
  });
});

describe("a real embedding model for the bench (--embeddings, --embeddings-url)", () => {
  it("asks an OpenAI-compatible /v1/embeddings through the openai SDK, each text once", async () => {
    const inputs: string[][] = [];
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (d) => {
        raw += d;
      });
      req.on("end", () => {
        const body = JSON.parse(raw) as { model: string; input: string[] };
        inputs.push(body.input);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            object: "list",
            model: body.model,
            data: body.input.map((t, index) => ({ object: "embedding", index, embedding: embed(t, 32) })),
            usage: { prompt_tokens: 1, total_tokens: 1 },
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as AddressInfo;
      const embedder = await openaiEmbedder({
        model: parseEmbeddingsFlag("openai:nomic-embed-text"),
        baseURL: `http://127.0.0.1:${port}/v1`,
      });
      const [a, b] = await embedder.embed(["one text", "another"]);
      expect(a).toHaveLength(32);
      expect(b).toEqual(embed("another", 32).map((x) => expect.closeTo(x, 6)));
      await embedder.embed(["one text", "a third"]);
      expect(inputs).toEqual([["one text", "another"], ["a third"]]);
      expect(embedder.model).toContain("nomic-embed-text");
    } finally {
      server.close();
    }
    expect(() => parseEmbeddingsFlag("cohere:x")).toThrow(/openai:MODEL/);
  });
});

describe("the recall bench harness", () => {
  it("runs the five systems on the same data, the same figures on every run", async () => {
    const figures = async () => {
      const report = await runRecallBench({ users: 1, turns: 60, seed: 2 });
      return { ...report, systems: report.systems.map(({ ms: _ms, ...rest }) => rest) };
    };
    const report = await figures();
    expect(report.systems.map((s) => s.name)).toEqual([
      "words-old",
      "bm25",
      "bm25+embeddings",
      "bm25+flush",
      "bm25+embeddings+flush",
    ]);
    expect(report.questions).toBe(50);
    const rate = (name: string) => report.systems.find((s) => s.name === name)?.overall.recall_at_5 ?? 0;
    expect(rate("bm25+embeddings+flush")).toBeGreaterThan(rate("words-old"));
    expect(report.extractor.true_facts).toBeGreaterThan(0);
    expect(await figures()).toEqual(report);
  });
});
