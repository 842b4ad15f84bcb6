// A deterministic bag-of-concepts embedder: a stand-in for an embedding model that behaves like one
// on paraphrase. A hand-written lexicon of everyday vocabulary maps words (and their simple
// inflections) to concepts ("sister", "brother", "sibling" → FAMILY; "live", "moved", "home" →
// RESIDENCE; a city's name → CITY), so "Where does my sister live?" lands near "My sister Ada moved to
// Lisbon" although they share one word, while "My sister loves painting" (same word, other meaning)
// lands further away. Every content word is also hashed into the vector at a lower weight, as a real
// model also keeps some of the surface form. No network, no state: the same text gives the same vector.
//
// The lexicon is general vocabulary (family, home, food, health, work, travel …), written without
// the benchmark's facts or answers in view; the benchmark's questions are hand-written and are not
// generated from these lists.

/** Concept → the words that evoke it (base forms; inflections are found by stripping endings). */
const LEXICON = {
  FAMILY:
    "family sister brother sibling mother mom mum mommy father dad daddy parent son daughter kid child children boy girl wife husband spouse partner aunt uncle cousin grandma grandmother grandpa grandfather grandparent niece nephew relative in-law twin fiance fiancee",
  FRIEND:
    "friend pal buddy mate bestie neighbour neighbor colleague coworker acquaintance roommate flatmate classmate",
  RESIDENCE:
    "live living alive move moving relocate home house apartment flat address reside residence based settle stay located hometown neighbourhood neighborhood street condo dwelling",
  ORIGIN: "grow grew grown raise born birthplace hometown childhood native",
  CITY: "city town village capital downtown suburb",
  TRAVEL:
    "trip travel vacation holiday flight fly flew plane airport journey abroad tour visit passport booked booking destination headed getaway itinerary luggage conference",
  FOOD: "eat ate eaten food meal dish cook recipe snack dinner lunch breakfast nut peanut walnut almond cashew shellfish shrimp sesame gluten dairy egg wheat soy kiwi strawberry pasta pizza salad soup curry taco lasagna tart pie cake bread cheese vegetarian vegan restaurant diet bake potluck dessert chocolate sugar fruit vegetable meat fish pork beef chicken",
  RESTRICTION:
    "allergic allergy intolerant intolerance avoid can't cannot mustn't never forbidden banned cut quit stop without react reaction",
  HEALTH:
    "health healthy sick ill illness doctor medication medicine pill tablet prescription dose drug blood pressure heart symptom hospital clinic dentist teeth tooth appointment checkup diagnosis therapist nurse allergic allergy transfusion condition asthma diabetes",
  PET: "dog cat puppy kitten pet animal kitty parrot hamster rabbit vet veterinarian bark leash",
  NAME: "name named call called nickname title",
  WORK: "work job boss manager employer employee office company firm career occupation profession colleague coworker team report contract client meeting promotion salary hire hired shift business supervisor",
  JOB: "nurse architect accountant engineer teacher lawyer plumber designer developer chef electrician pharmacist journalist carpenter programmer librarian firefighter paramedic dentist surgeon translator baker",
  TRANSPORT:
    "commute commuting tram bus train ferry bike bicycle cycle car drive driving drove subway metro taxi walk vehicle ride scooter motorbike",
  CAR: "car vehicle drive driving drove park parking garage sedan hatchback van truck suv",
  ACCESS:
    "password wifi wi-fi code pin login online internet network router passcode key keys lock unlock door spare combination locker",
  SPOT: "fridge drawer shelf cupboard whiteboard desk hallway kitchen sticker under behind flowerpot doormat mat hidden hide",
  COLOR:
    "colour color shade hue red blue green teal yellow purple orange pink black white grey gray mustard navy maroon",
  PREFERENCE: "favourite favorite like love prefer best enjoy fond adore",
  DRINK: "coffee tea drink latte espresso cappuccino milk oat juice beer wine cup brew",
  DATE: "spring summer autumn fall winter season birthday anniversary date day january february march april may june july august september october november december week month year expire expiry renew renewal due until valid deadline",
  CLOCK: "wake awake morning early alarm o'clock time bed sleep clock",
  STUDY:
    "school study studied student university college major degree class course learn learning lesson elementary academy graduate",
  LANGUAGE:
    "language tongue portuguese spanish japanese french german italian mandarin korean dutch greek russian arabic",
  MUSIC:
    "music musical musically band instrument play cello banjo trombone guitar piano violin drum saxophone song sing podcast episode listen",
  SPORT:
    "football soccer team support root fan match gym swim swimming pool lap fitness exercise workout run running league club tennis",
  FEAR: "fear afraid scared scare terrified terrify creep phobia nervous frighten anxious",
  PLANT: "plant greenery garden flower bonsai cactus fern succulent orchid water leaf pot",
  COMMITMENT: "promise promised bring supposed will owe commit agreed remind deliver contribute",
  PHONE: "phone number call reach contact text dial mobile cell",
  LANDLORD: "landlord owner rent lease tenant",
  MONEY: "bank money pay paid bill insurance coverage policy price cost premium",
  WEATHER: "weather rain sunny snow cold hot forecast windy storm",
  TECH: "computer laptop email software app bug update install screen",
  BOOK: "book novel read reading author chapter library",
  SEND: "send sent email mail deliver document report",
};

/** A small gazetteer: city names evoke CITY (and keep their own word feature). */
const CITIES =
  "lisbon porto madrid barcelona valencia seville paris lyon marseille berlin munich hamburg vienna prague rome milan naples florence venice london manchester dublin cork edinburgh glasgow amsterdam rotterdam ghent brussels antwerp oslo bergen stockholm copenhagen helsinki tallinn riga warsaw krakow budapest athens istanbul cairo nairobi lagos tokyo kyoto osaka seoul beijing shanghai singapore bangkok mumbai delhi sydney melbourne adelaide auckland toronto montreal quebec vancouver chicago boston seattle denver austin houston miami atlanta portland phoenix dallas detroit mexico bogota lima santiago quito";

const STOPWORDS = new Set(
  "a an and are as at be been but by do does did for from had has have he her his how i i'm in is it its me my of on or our she so that the their them there they this to us was we were what when where which who why with you your".split(
    " ",
  ),
);

const CONCEPTS = Object.keys(LEXICON);
const CONCEPT_INDEX = new Map(CONCEPTS.map((c, i) => [c, i]));
/** word → concept names */
const WORD_CONCEPTS = new Map();
for (const [concept, words] of Object.entries(LEXICON)) {
  for (const word of words.split(/\s+/)) {
    const list = WORD_CONCEPTS.get(word) ?? [];
    if (!list.includes(concept)) list.push(concept);
    WORD_CONCEPTS.set(word, list);
  }
}
for (const city of CITIES.split(/\s+/)) {
  const list = WORD_CONCEPTS.get(city) ?? [];
  list.push("CITY");
  WORD_CONCEPTS.set(city, list);
}

/** Weights: a concept counts fully, a hashed surface word less. */
const CONCEPT_WEIGHT = 1;
const WORD_WEIGHT = 0.45;

/** The forms a word may have come from, the word itself first: "moved" → moved, move, mov … */
function forms(word) {
  const out = [word];
  const add = (w) => {
    if (w.length >= 2 && !out.includes(w)) out.push(w);
  };
  if (word.endsWith("'s")) add(word.slice(0, -2));
  if (word.endsWith("ies")) add(`${word.slice(0, -3)}y`);
  if (word.endsWith("es")) add(word.slice(0, -2));
  if (word.endsWith("s") && !word.endsWith("ss")) add(word.slice(0, -1));
  if (word.endsWith("ied")) add(`${word.slice(0, -3)}y`);
  if (word.endsWith("ed")) {
    add(word.slice(0, -2));
    add(word.slice(0, -1));
    if (word.length > 4 && word.at(-3) === word.at(-4)) add(word.slice(0, -3));
  }
  if (word.endsWith("ing")) {
    add(word.slice(0, -3));
    add(`${word.slice(0, -3)}e`);
    if (word.length > 5 && word.at(-4) === word.at(-5)) add(word.slice(0, -4));
  }
  if (word.endsWith("er")) add(word.slice(0, -2));
  return out;
}

/** The concepts a word evokes (through its first form the lexicon knows) and the stem it is hashed as. */
function lookup(word) {
  for (const form of forms(word)) {
    const concepts = WORD_CONCEPTS.get(form);
    if (concepts) return { concepts, stem: form };
  }
  const all = forms(word);
  return { concepts: [], stem: all.length > 1 ? all[all.length > 2 ? 2 : 1] : word };
}

/** FNV-1a, 32 bits. */
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Lowercase words, apostrophes kept inside ("can't", "sister's"). */
export function words(text) {
  return (
    text
      .toLowerCase()
      .replaceAll("’", "'")
      .match(/[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*/gu) ?? []
  );
}

/**
 * The embedding of `text`: concept weights in the first dimensions, hashed word features in the
 * rest, L2-normalised (a text with no word gives the zero vector).
 *
 * @example
 * const q = embed("Where does my sister live?");
 * const f = embed("My sister Ada moved to Lisbon last spring.");
 * cosine(q, f); // ≈ 0.5, well above an unrelated sentence's
 */
export function embed(text, dims = 256) {
  if (!Number.isInteger(dims) || dims < 16)
    throw new Error(`embed: dims must be an integer ≥ 16, not ${dims}`);
  const vector = new Array(dims).fill(0);
  const conceptDims = Math.min(CONCEPTS.length, Math.floor(dims / 2));
  const wordDims = dims - conceptDims;
  for (const word of words(text)) {
    const { concepts, stem } = lookup(word);
    for (const concept of concepts) {
      const index = CONCEPT_INDEX.get(concept) ?? 0;
      const at = index < conceptDims ? index : conceptDims + (hash(concept) % wordDims);
      vector[at] += CONCEPT_WEIGHT;
    }
    if (STOPWORDS.has(word)) continue;
    const h = hash(stem);
    // A signed hash, so two words that share a bucket do not always add up.
    vector[conceptDims + (h % wordDims)] += (h & 0x80000000 ? -1 : 1) * WORD_WEIGHT;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((x) => x / norm);
}

/** Cosine similarity of two vectors of the same length (0 when either is zero). */
export function cosine(a, b) {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * The embedder in the shape recall takes (`{model, embed(texts, purpose)}`), for the bench and for
 * test fakes.
 */
export function conceptEmbedder(dims = 256) {
  return {
    model: `bag-of-concepts-${dims}`,
    async embed(texts) {
      return texts.map((t) => embed(t, dims));
    },
  };
}
