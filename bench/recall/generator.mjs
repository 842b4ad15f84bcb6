// The recall benchmark's data: per synthetic user, a long conversation over several bouts (weeks of
// chat) in which facts are stated once among hundreds of distractor turns, some facts are updated
// later (the newer value must win), some are stated in the part of a bout that compaction later
// folds into a summary, and questions ask for each fact, plainly or paraphrased. Deterministic: the
// same seed and sizes give the same data, byte for byte.
import { distractor, OTHERS } from "./distractors.mjs";
import { ANSWERS, answerMatch, FACTS } from "./templates.mjs";

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = (rng, xs) => xs[Math.floor(rng() * xs.length)];
const int = (rng, lo, hi) => lo + Math.floor(rng() * (hi - lo + 1));

function shuffle(rng, xs) {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Where the synthetic weeks start (a fixed date, so the data is the same on every run). */
const EPOCH = Date.parse("2026-01-05T09:00:00.000Z");
const DAY = 86_400_000;
const MINUTE = 60_000;

export const DEFAULTS = Object.freeze({
  seed: 1,
  users: 4,
  /** Distractor exchanges per user. */
  turns: 300,
  bouts: 6,
  /** Bouts (the first ones) that compaction folds, all but their last few exchanges. */
  compactedBouts: 3,
  /** Facts asked twice (a plain and a paraphrased question), updated facts, facts before a compaction. */
  plain: 15,
  updated: 10,
  compaction: 10,
  /** Share of fact statements the user prefixes with "remember" (the old model stores only those). */
  rememberShare: 0.25,
});

/** Where a fact was stated, filled in once the messages are laid out. */
const NOT_YET = /** @type {{ bout: string, seq: number, folded: boolean } | undefined} */ (undefined);

const REMEMBER = ["Please remember this: ", "Remember that ", "Remember: ", "Can you remember that "];
const ACKS = [
  "Got it.",
  "Noted!",
  "Okay, good to know.",
  "Thanks for telling me.",
  "I'll keep that in mind.",
];

/** Fills `{v}` and `{n}`; a remembered statement gets a "remember" prefix the way people say it. */
function phrase(template, value, name, remember, rng) {
  const text = template.replaceAll("{v}", value).replaceAll("{n}", name);
  if (!remember) return text;
  const prefix = pick(rng, REMEMBER);
  return prefix.endsWith(": ") ? prefix + text : prefix + text[0].toLowerCase() + text.slice(1);
}

/** One user's conversation, facts and questions. */
function generateUser(index, options) {
  const rng = prng(options.seed * 7919 + index * 104729 + 17);
  const user = `u${index}`;
  const withUpdate = shuffle(
    rng,
    FACTS.filter((f) => f.update),
  );
  const updated = withUpdate.slice(0, options.updated);
  const rest = shuffle(
    rng,
    FACTS.filter((f) => !updated.includes(f)),
  );
  const compaction = rest.slice(0, options.compaction);
  const plain = rest.slice(options.compaction, options.compaction + options.plain);

  // Each pool's answers are drawn without replacement, so no two facts of a user share an answer.
  const drawn = new Map();
  const draw = (pool) => {
    const left = drawn.get(pool) ?? shuffle(rng, ANSWERS[pool]);
    drawn.set(pool, left);
    const value = left.pop();
    if (value === undefined) throw new Error(`recall bench: the "${pool}" answers ran out for one user`);
    return value;
  };

  // Bouts of distractor exchanges; compacted bouts fold all but their last 3 exchanges.
  const perBout = Math.max(4, Math.floor(options.turns / options.bouts));
  const bouts = Array.from({ length: options.bouts }, (_, b) => ({
    id: `${user}-b${b}`,
    items: Array.from(
      {
        length:
          b === options.bouts - 1 ? Math.max(4, options.turns - perBout * (options.bouts - 1)) : perBout,
      },
      () => ({ kind: "distractor", pair: distractor(rng) }),
    ),
    boundary: 0,
  }));
  const compacted = Math.min(options.compactedBouts, options.bouts - 1);
  for (let b = 0; b < compacted; b++) bouts[b].boundary = bouts[b].items.length - 3;
  const insert = (b, item, { folded }) => {
    const bout = bouts[b];
    const at = folded
      ? int(rng, 0, Math.max(0, bout.boundary - 1))
      : b < compacted
        ? int(rng, bout.boundary, bout.items.length)
        : int(rng, 0, bout.items.length);
    bout.items.splice(at, 0, item);
    if (at < bout.boundary || (folded && at <= bout.boundary)) bout.boundary += 1;
  };

  const facts = [];
  const statement = (fact, template, value, name, type) => {
    const remember = rng() < options.rememberShare;
    return {
      kind: "fact",
      fact: fact.id,
      type,
      remember,
      pair: [phrase(template, value, name, remember, rng), pick(rng, ACKS)],
    };
  };
  const later = Math.max(compacted, options.bouts - 2);
  for (const fact of plain) {
    const value = draw(fact.pool);
    const name = pick(rng, OTHERS.name);
    facts.push({ id: fact.id, type: "plain", value, match: answerMatch(value), stale: [], said: NOT_YET });
    insert(int(rng, compacted, options.bouts - 1), statement(fact, fact.say, value, name, "plain"), {
      folded: false,
    });
  }
  for (const fact of compaction) {
    const value = draw(fact.pool);
    const name = pick(rng, OTHERS.name);
    facts.push({
      id: fact.id,
      type: "compaction",
      value,
      match: answerMatch(value),
      stale: [],
      said: NOT_YET,
    });
    insert(int(rng, 0, compacted - 1), statement(fact, fact.say, value, name, "compaction"), {
      folded: true,
    });
  }
  for (const fact of updated) {
    const old = draw(fact.pool);
    const value = draw(fact.pool);
    const name = pick(rng, OTHERS.name);
    facts.push({
      id: fact.id,
      type: "updated",
      value,
      match: answerMatch(value),
      stale: [answerMatch(old)],
      said: NOT_YET,
      firstSaid: NOT_YET,
    });
    // The first value early (in any bout before the last two, perhaps in a folded part), the new one late.
    const first = int(rng, 0, later - 1);
    insert(first, statement(fact, fact.say, old, name, "updated-first"), {
      folded: first < compacted && rng() < 0.5,
    });
    insert(int(rng, later, options.bouts - 1), statement(fact, fact.update, value, name, "updated"), {
      folded: false,
    });
  }

  // Messages, times and the compaction events, in the order they happen.
  const events = [];
  const statedAt = new Map();
  let clock = EPOCH + index * 3 * DAY;
  bouts.forEach((bout, b) => {
    clock = EPOCH + index * 3 * DAY + b * 6 * DAY + int(rng, 0, 10) * 3_600_000;
    let seq = 0;
    bout.items.forEach((item, i) => {
      for (const [role, text] of [
        ["user", item.pair[0]],
        ["assistant", item.pair[1]],
      ]) {
        seq += 1;
        clock += int(rng, 1, 4) * MINUTE;
        const at = new Date(clock).toISOString();
        events.push({ kind: "message", bout: bout.id, seq, role, text, at });
        if (role === "user" && item.kind === "fact") {
          statedAt.set(`${item.fact}:${item.type}`, { bout: bout.id, seq, folded: i < bout.boundary });
        }
        if (role === "user" && item.remember) events.at(-1).remember = true;
      }
      if (b < compacted && i === bout.boundary - 1) {
        events.push({ kind: "compact", bout: bout.id, throughSeq: seq, at: new Date(clock).toISOString() });
      }
    });
  });
  const now = new Date(clock + DAY).toISOString();
  for (const fact of facts) {
    const type = fact.type === "updated" ? "updated" : fact.type;
    fact.said = statedAt.get(`${fact.id}:${type}`);
    if (fact.type === "updated") fact.firstSaid = statedAt.get(`${fact.id}:updated-first`);
  }

  const questions = [];
  for (const fact of facts) {
    const template = FACTS.find((f) => f.id === fact.id);
    const ask = (type, wording) =>
      questions.push({
        id: `${user}-q${questions.length}`,
        user,
        fact: fact.id,
        type,
        wording,
        text: wording === "plain" ? template.plain : template.para,
        answer: fact.match,
        stale: fact.stale,
      });
    if (fact.type === "plain") {
      ask("plain", "plain");
      ask("paraphrased", "para");
    } else {
      // Updated and folded facts are asked in either wording, half and half.
      ask(fact.type, questions.length % 2 === 0 ? "plain" : "para");
    }
  }
  return { id: user, events, facts, questions, now };
}

/**
 * The dataset: `{ seed, sizes, users: [{ id, events, facts, questions, now }] }`. `events` are the
 * messages (`{kind: "message", bout, seq, role, text, at, remember?}`) and compactions
 * (`{kind: "compact", bout, throughSeq, at}`) in time order; `facts` and `questions` are the ground
 * truth, which no system under test sees.
 *
 * @example
 * const data = generateDataset({ seed: 1, users: 2 });
 */
export function generateDataset(options = {}) {
  const sizes = { ...DEFAULTS, ...options };
  for (const key of ["users", "turns", "bouts"]) {
    if (!Number.isInteger(sizes[key]) || sizes[key] < 1) {
      throw new Error(`recall bench: ${key} must be a positive whole number, not ${sizes[key]}`);
    }
  }
  if (sizes.bouts < 3) throw new Error("recall bench: bouts must be at least 3");
  const users = Array.from({ length: sizes.users }, (_, i) => generateUser(i, sizes));
  return { seed: sizes.seed, sizes, users };
}
