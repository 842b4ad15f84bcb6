// Distractor turns: small talk, tasks for the assistant, passing first-person remarks, and other
// people's facts that share the facts' words but not their meaning or answers ("My coworker's sister
// moved to Berlin"). Their values come from pools disjoint from the answers (templates.mjs).

export const OTHERS = {
  city: "Berlin Madrid Paris Rome Chicago Boston Seattle Toronto Vienna Prague Munich Dublin Athens Warsaw Sydney Austin".split(
    " ",
  ),
  name: "Tom Sarah Mike Jenny Carlos Emma Raj Lucy Dan Olga Ben Fatima Greg Nina Paul Hana".split(" "),
  person: [
    "my coworker",
    "my neighbour's kid",
    "a friend of mine",
    "my cousin",
    "my boss's wife",
    "someone at the gym",
    "my old roommate",
    "a guy on my team",
  ],
  food: "pasta pizza salad soup curry tacos risotto pancakes burgers dumplings ramen paella".split(" "),
  allergen: "cats pollen dust penicillin latex bees".split(" "),
  pet: "Rex Luna Max Bella Charlie Milo".split(" "),
  colour: "red blue orange pink grey".split(" "),
  car: "Toyota Honda Ford Tesla Kia".split(" "),
  job: "teacher nurse lawyer plumber chef electrician".split(" "),
  weekday: "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(" "),
  sport: "basketball tennis rugby cricket hockey golf".split(" "),
};

const TOPICS = [
  "solar panels",
  "the French revolution",
  "black holes",
  "sourdough baking",
  "houseplants",
  "budgeting",
  "compound interest",
  "the Roman empire",
  "electric cars",
  "sleep hygiene",
  "climate change",
  "chess openings",
  "bird migration",
  "the stock market",
  "machine learning",
];
const THINGS = [
  "invoice",
  "slide deck",
  "cover letter",
  "birthday message",
  "complaint email",
  "meeting agenda",
  "grocery list",
  "thank-you note",
  "project update",
];

const pick = (rng, xs) => xs[Math.floor(rng() * xs.length)];
const cap = (s) => s[0].toUpperCase() + s.slice(1);

/** Each returns `[user text, assistant reply]`. */
const KINDS = [
  // Small talk.
  (r) => [
    pick(r, [
      "How's it going?",
      "Good morning!",
      "Thanks, that helps a lot.",
      "lol ok",
      "That's interesting.",
      "Hmm, let me think about it.",
      "Sorry, I got distracted.",
      "Okay, back to work.",
      "You're the best.",
      "Never mind, forget it.",
    ]),
    pick(r, ["Glad to help!", "Sure thing.", "Take your time.", "Anytime.", "Of course."]),
  ],
  (r) => [
    `What's the weather looking like in ${pick(r, OTHERS.city)} this week?`,
    "I can't check live weather, but it's usually mild this time of year.",
  ],
  // Tasks.
  (r) => {
    const topic = pick(r, TOPICS);
    return [`Can you explain ${topic} in simple terms?`, `Sure: here's a short overview of ${topic}.`];
  },
  (r) => {
    const thing = pick(r, THINGS);
    const name = pick(r, OTHERS.name);
    return [`Draft a ${thing} for ${name}, please.`, `Here's a draft ${thing} addressed to ${name}.`];
  },
  (r) => {
    const food = pick(r, OTHERS.food);
    return [`What's a good recipe for ${food}?`, `A simple ${food} recipe: start with fresh ingredients.`];
  },
  (r) => [
    `Convert ${1 + Math.floor(r() * 90)} miles to kilometres.`,
    "That's about 1.6 kilometres per mile.",
  ],
  (r) => [
    `Remind me how to say "${pick(r, ["good night", "thank you", "where is the station", "the bill, please"])}" in ${pick(r, ["French", "German", "Italian"])}.`,
    "Here's the phrase and how to pronounce it.",
  ],
  (r) => [
    `Help me plan a ${pick(r, ["weekend", "day trip", "city break"])} in ${pick(r, OTHERS.city)}.`,
    "Here's a rough plan with a few sights and places to eat.",
  ],
  (r) => [
    `Which is healthier, ${pick(r, OTHERS.food)} or ${pick(r, OTHERS.food)}?`,
    "Both can fit a balanced diet in moderation.",
  ],
  (r) => [
    `Give me a workout I can do at the gym on ${pick(r, OTHERS.weekday)}.`,
    "Try three sets of squats, rows and presses.",
  ],
  // Passing first-person remarks (true, but not worth remembering).
  (r) => [
    pick(r, [
      "I'm so tired today.",
      "I'm thinking about ordering takeaway tonight.",
      "I will probably skip the gym this evening.",
      "I'm bored, tell me something fun.",
      "My coffee went cold again.",
      "I'm stuck in traffic right now.",
      "My phone battery is almost dead.",
      "I just finished a long meeting.",
      "I'm going to take a short nap.",
    ]),
    pick(r, ["Hang in there!", "That sounds rough.", "Fair enough.", "Enjoy!"]),
  ],
  // Other people's facts: the facts' words, another person, another value.
  (r) => [`${cap(pick(r, OTHERS.person))}'s sister just moved to ${pick(r, OTHERS.city)}.`, "Big move!"],
  (r) => [`${cap(pick(r, OTHERS.person))} is allergic to ${pick(r, OTHERS.allergen)}.`, "Good to know."],
  (r) => [
    `${pick(r, OTHERS.name)}'s dog is called ${pick(r, OTHERS.pet)}, isn't that cute?`,
    "Very cute name!",
  ],
  (r) => [
    `${cap(pick(r, OTHERS.person))} has a new manager called ${pick(r, OTHERS.name)}.`,
    "New managers take some getting used to.",
  ],
  (r) => [
    `${pick(r, OTHERS.name)} drives a ${pick(r, OTHERS.colour)} ${pick(r, OTHERS.car)} and never parks it straight.`,
    "Ha, classic.",
  ],
  (r) => [
    `${pick(r, OTHERS.name)} grew up in ${pick(r, OTHERS.city)} and still talks about it.`,
    "Hometowns stick with people.",
  ],
  (r) => [
    `${cap(pick(r, OTHERS.person))} works as a ${pick(r, OTHERS.job)} now.`,
    "Sounds like a good change.",
  ],
  (r) => [
    `${pick(r, OTHERS.name)} is going on vacation to ${pick(r, OTHERS.city)} next month.`,
    "Lucky them!",
  ],
  (r) => [
    `${cap(pick(r, OTHERS.person))}'s favourite colour is ${pick(r, OTHERS.colour)}, apparently.`,
    "Noted, for gift ideas.",
  ],
  (r) => [
    `${pick(r, OTHERS.name)} supports a ${pick(r, OTHERS.sport)} team and won't stop talking about it.`,
    "Fans are like that.",
  ],
  (r) => [
    `The wifi at ${pick(r, ["the café", "the library", "my parents' place"])} is terrible.`,
    "Maybe try moving closer to the router.",
  ],
  (r) => [`${pick(r, OTHERS.name)}'s birthday party is on ${pick(r, OTHERS.weekday)}.`, "Sounds fun."],
];

/** One distractor exchange: `[user text, assistant reply]`. */
export function distractor(rng) {
  return pick(rng, KINDS)(rng);
}
