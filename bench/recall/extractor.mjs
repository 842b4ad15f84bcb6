// A deterministic stand-in for the model call the compaction flush makes: given the transcript of
// the messages being folded (as the flush prompt shows it: "User: …" / "Assistant: …" lines), it
// returns the durable facts, preferences and commitments the user stated, as `{key, value}` notes,
// the way a model asked to would. It reads only the text: rules over first-person statements ("my X
// is …", "our X …", "I'm …", "I will …", "remember that …"), passing remarks ("today", "right now")
// left out. Like a model it makes mistakes both ways (it notes some chatter, misses odd phrasings);
// the benchmark counts both.

const REMEMBER = /^(?:please\s+)?(?:can you\s+)?remember(?:\s+this)?(?:\s+that)?\s*[:,]?\s*/i;
const PASSING =
  /\b(today|tonight|right now|this evening|this afternoon|just finished|almost dead|went cold|bored|tell me|probably|short nap)\b/i;
const QUESTION = /\?\s*$/;
const FILLER = new Set(
  "a an the at on in to of for with and my our i i'm it's is are was be now these days this that so always every usually new".split(
    " ",
  ),
);

/** Up to three content words of a phrase, as a note's key ("my sister Ada" → "sister"). */
function keyOf(phrase) {
  const kept = phrase
    .replace(/[^\p{L}\p{N}' -]/gu, " ")
    .split(/\s+/)
    .filter((w) => w && !FILLER.has(w.toLowerCase()) && !/^[A-Z]|\d/.test(w))
    .map((w) => w.toLowerCase().replace(/'s$/, ""));
  return kept.slice(0, 3).join(" ");
}

/** Rules: a sentence shape → the words its key is made of. */
const RULES = [
  // "my sister Ada moved …", "my mom's birthday is …", "our wifi password is …"
  {
    re: /^(?:my|our)\s+((?:[\w']+\s+){0,3}?[\w']+?)\s+(?:is|are|was|were|moved|lives|live|works|goes|expires|renews|has|had)\b/i,
    key: (m) => keyOf(m[1]),
  },
  { re: /^the\s+((?:[\w']+\s+){0,2}[\w']+?)\s+(?:is|are)\b/i, key: (m) => keyOf(m[1]) },
  // "I'm allergic to …", "I'm learning …", "I'm terrified of …"
  { re: /^i(?:'m|\s+am)\s+([\w'-]+(?:\s+[\w'-]+)?)/i, key: (m) => `i am ${keyOf(m[1])}`.trim() },
  // Commitments: "I will …", "I'll …", "I promised …", "I have to …"
  {
    re: /^i(?:\s+will|'ll|\s+promised|\s+have to|\s+need to|\s+must)\s+([\w'-]+(?:\s+[\w'-]+){0,3})/i,
    key: (m) => `todo ${keyOf(m[1])}`.trim(),
  },
  // Habits and possessions: "I take …", "I drive …", "I grew up in …"
  {
    re: /^i\s+(take|drive|play|work|go|grew up|support|keep|usually|studied|swim|parked|live|have|own|sold)\b\s*(.*)/i,
    key: (m) => `${m[1].toLowerCase()} ${keyOf(m[2])}`.trim(),
  },
  // "We're going to …", "We changed …"
  { re: /^we(?:'re|\s+are|\s+will|\s+changed)\s+(.+)/i, key: (m) => `we ${keyOf(m[1])}`.trim() },
];

function sentences(text) {
  return text
    .split(/(?<!\b(?:Dr|Mr|Mrs|Ms|St)\.)(?<=[.!?])\s+|;\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The facts of one user line. */
function factsOf(line) {
  const notes = [];
  const remembered = REMEMBER.test(line);
  for (let sentence of sentences(line.replace(REMEMBER, ""))) {
    sentence = sentence.replace(/^(?:change of plan|quick update|fyi|by the way|so)\s*[:,]?\s*/i, "");
    if (QUESTION.test(sentence) || (!remembered && PASSING.test(sentence))) continue;
    for (const rule of RULES) {
      const m = rule.re.exec(sentence);
      if (!m) continue;
      const key = rule.key(m);
      if (key) notes.push({ key, value: sentence.replace(/[.!]+$/, "") });
      break;
    }
  }
  return notes;
}

/**
 * The notes a model would keep from a transcript: user lines only (what the assistant said is not a
 * fact about the user), one note per key, the last statement of a key winning.
 *
 * @example
 * extractFacts("User: My sister Ada moved to Lisbon.\nAssistant: Nice!");
 * // [{ key: "sister", value: "My sister Ada moved to Lisbon" }]
 */
export function extractFacts(transcript) {
  const byKey = new Map();
  for (const raw of transcript.split("\n")) {
    const m = /^User:\s*(.*)$/.exec(raw.trim());
    if (!m) continue;
    for (const note of factsOf(m[1])) {
      byKey.delete(note.key);
      byKey.set(note.key, note);
    }
  }
  return [...byKey.values()];
}

/** What the fake model stores with memory_store on its own: only what the user asks it to remember. */
export function rememberedFacts(userText) {
  return REMEMBER.test(userText.trim()) ? factsOf(userText.trim()) : [];
}
