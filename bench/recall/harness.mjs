// The recall benchmark's harness: the systems under test, how each one takes in a user's
// conversation (the same events, in the same order, on the same clock), the questions asked of it,
// and the figures. A System is `{ name, ingest(user), recall(question, k): Promise<string[]> }`
// (the texts of its top k results), made fresh for each user.
import { conceptEmbedder } from "./concepts.mjs";
import { extractFacts, rememberedFacts } from "./extractor.mjs";
import { generateDataset } from "./generator.mjs";
import { aggregate, holds, K, scoreQuestion } from "./metrics.mjs";
import { closeLabs, createRecallLab } from "./spar-lab.mjs";
import { createWordsOld } from "./words-old.mjs";

/** The hybrid systems run Spar's own recall (bench/recall/spar-lab.mjs, over dist/). */
const LAB = { create: createRecallLab, implementation: "spar", from: "bench/recall/spar-lab.mjs" };

/**
 * Plays a user's events into a lab (`storeMemory`, `addMessage`, `compact`) on the bench's clock:
 * each message at its time; when the user asks to be remembered, the fake model's memory_store;
 * each compaction. Ends with the clock at the time the questions are asked.
 */
async function play(lab, user, clock) {
  for (const event of user.events) {
    clock.now = Date.parse(event.at);
    if (event.kind === "compact") {
      await lab.compact(event.bout, event.throughSeq);
      continue;
    }
    await lab.addMessage({
      bout: event.bout,
      seq: event.seq,
      role: event.role,
      text: event.text,
      at: event.at,
    });
    if (event.role === "user") {
      for (const { key, value } of rememberedFacts(event.text)) await lab.storeMemory(key, value);
    }
  }
  clock.now = Date.parse(user.now);
}

/** A System over a lab made by `makeLab({ now })`. */
function labSystem(name, implementation, makeLab) {
  return {
    name,
    implementation,
    create() {
      const clock = { now: 0 };
      const lab = makeLab({ now: () => clock.now });
      return {
        name,
        ingest: (user) => play(lab, user, clock),
        recall: (question, k) => lab.recall(question, k),
      };
    },
  };
}

/** The flush: the extractor over the folded messages' transcript (what the model call would return). */
const flush = async (transcript) => extractFacts(transcript);

/** The five systems, in the order they are reported. */
export function systems(lab, embedder) {
  const make = (opts) => (base) => lab.create({ ...opts, ...base });
  return [
    labSystem("words-old", "frozen (main before issue 33)", ({ now }) => createWordsOld({ now })),
    labSystem("bm25", lab.implementation, make({})),
    labSystem("bm25+embeddings", lab.implementation, make({ embedder })),
    labSystem("bm25+flush", lab.implementation, make({ flush })),
    labSystem("bm25+embeddings+flush", lab.implementation, make({ embedder, flush })),
  ];
}

/**
 * The extractor against the ground truth: over every compaction's folded messages, how many notes
 * it made, how many hold one of the user's true answers (current or replaced) and how many do not,
 * and how many of the facts stated in folded messages it caught.
 */
export function extractorStats(dataset) {
  let extracted = 0;
  let truthful = 0;
  let folded = 0;
  let caught = 0;
  for (const user of dataset.users) {
    const answers = user.facts.flatMap((f) => [f.match, ...f.stale]);
    const notes = [];
    const through = new Map();
    for (const event of user.events) {
      if (event.kind !== "compact") continue;
      const from = through.get(event.bout) ?? 0;
      through.set(event.bout, event.throughSeq);
      const lines = user.events
        .filter(
          (e) => e.kind === "message" && e.bout === event.bout && e.seq > from && e.seq <= event.throughSeq,
        )
        .map((e) => `${e.role === "user" ? "User" : "Assistant"}: ${e.text}`);
      notes.push(...extractFacts(`New messages:\n${lines.join("\n")}`));
    }
    extracted += notes.length;
    truthful += notes.filter((n) => answers.some((a) => holds(n.value, a))).length;
    for (const fact of user.facts) {
      const statements = [
        fact.said?.folded ? fact.match : null,
        fact.firstSaid?.folded ? fact.stale[0] : null,
      ].filter(Boolean);
      folded += statements.length;
      caught += statements.filter((a) => notes.some((n) => holds(n.value, a))).length;
    }
  }
  return {
    notes: extracted,
    true_facts: truthful,
    false_facts: extracted - truthful,
    folded_facts: folded,
    caught,
  };
}

/**
 * Runs every system on the dataset: `{ seed, sizes, questions, embedder, lab, systems: [{ name,
 * implementation, ms, overall, by_type }], extractor }`.
 */
export async function runRecallBench({ seed, users, turns, embedder } = {}) {
  const dataset = generateDataset({
    ...(seed === undefined ? {} : { seed }),
    ...(users === undefined ? {} : { users }),
    ...(turns === undefined ? {} : { turns }),
  });
  const lab = LAB;
  const embed = embedder ?? conceptEmbedder(256);
  const results = [];
  for (const system of systems(lab, embed)) {
    const started = performance.now();
    const outcomes = [];
    for (const user of dataset.users) {
      const instance = system.create();
      await instance.ingest(user);
      for (const question of user.questions) {
        const texts = await instance.recall(question.text, K);
        outcomes.push({ type: question.type, ...scoreQuestion(texts, question) });
      }
    }
    await closeLabs();
    results.push({
      name: system.name,
      implementation: system.implementation,
      ms: Math.round(performance.now() - started),
      ...aggregate(outcomes),
    });
  }
  const messages = dataset.users.reduce((a, u) => a + u.events.filter((e) => e.kind === "message").length, 0);
  return {
    seed: dataset.seed,
    sizes: dataset.sizes,
    messages,
    questions: dataset.users.reduce((a, u) => a + u.questions.length, 0),
    embedder: embed.model,
    lab: { implementation: lab.implementation, from: lab.from },
    systems: results,
    extractor: extractorStats(dataset),
  };
}
