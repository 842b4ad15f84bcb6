import { describe, expect, it } from "vitest";
import {
  countConversation,
  initialCreed,
  isSubstantial,
  mergeObservations,
  parseObservations,
  renderCreed,
} from "./creed.js";

const T0 = "2026-01-01T00:00:00.000Z";
const DAYS = (n: number) => new Date(Date.parse(T0) + n * 86_400_000).toISOString();
const fade = { rate_per_day: 0.05, forget_below: 0.05 };
const base = initialCreed({ name: "n", description: "A careful helper.", system_prompt: "p" }, T0);

describe("Creed rules", () => {
  it("starts from the manifest's description", () => {
    expect(base).toMatchObject({ identity: "A careful helper.", traits: [], observations: [] });
  });

  it("counts every conversation, its messages and new bouts", () => {
    const once = countConversation(base, { new_bout: true, messages: 2 }, T0);
    const twice = countConversation(once, { new_bout: false, messages: 4 }, T0);
    expect(twice.counters).toEqual({ bouts: 1, conversations: 2, messages: 6 });
  });

  it("reflects only on substantial exchanges", () => {
    const config = { reflect: true, reflect_min_chars: 100, max_observations: 10 };
    expect(isSubstantial("hi", "hello!", config)).toBe(false);
    expect(isSubstantial("x".repeat(60), "y".repeat(60), config)).toBe(true);
    expect(isSubstantial("x".repeat(60), "y".repeat(60), { ...config, reflect: false })).toBe(false);
  });

  it("adds new observations at 0.5 and reinforces a repeated one", () => {
    const first = mergeObservations(base, ["The user prefers answers in metric units"], T0, fade, 10);
    expect(first.observations).toEqual([
      { text: "The user prefers answers in metric units", confidence: 0.5, seen: 1, last_seen: T0 },
    ]);
    const again = mergeObservations(first, ["user prefers metric units in answers"], T0, fade, 10);
    expect(again.observations).toHaveLength(1);
    expect(again.observations[0]).toMatchObject({ confidence: 0.65, seen: 2 });
  });

  it("lets confidence decay with time and forgets what faded away", () => {
    const first = mergeObservations(base, ["Likes haiku"], T0, fade, 10);
    const later = mergeObservations(first, ["Works night shifts"], DAYS(14), fade, 10);
    const haiku = later.observations.find((o) => o.text === "Likes haiku");
    expect(haiku?.confidence).toBeCloseTo(0.5 * Math.exp(-0.7), 3);
    const muchLater = mergeObservations(later, [], DAYS(200), fade, 10);
    expect(muchLater.observations).toEqual([]);
  });

  it("keeps only the most confident observations", () => {
    let creed = mergeObservations(base, ["alpha fact"], T0, fade, 2);
    creed = mergeObservations(creed, ["alpha fact", "beta fact"], T0, fade, 2);
    creed = mergeObservations(creed, ["gamma thing"], T0, fade, 2);
    expect(creed.observations.map((o) => o.text)).toEqual(["alpha fact", "beta fact"]);
  });

  it("parses a reflection reply into at most three observations", () => {
    expect(parseObservations("- Likes tea\n- Lives in Oslo\n\n* Prefers brevity\n- extra")).toEqual([
      "Likes tea",
      "Lives in Oslo",
      "Prefers brevity",
    ]);
    expect(parseObservations("NONE")).toEqual([]);
  });

  it("renders compactly, leaving out empty sections", () => {
    expect(renderCreed("spar", base, [])).toBe("## Creed of spar\nIdentity: A careful helper.");
    const rich = countConversation(
      mergeObservations(
        { ...base, traits: ["patient"], directives: ["Cite sources"] },
        ["Likes tea"],
        T0,
        fade,
        5,
      ),
      { new_bout: true, messages: 2 },
      T0,
    );
    const text = renderCreed("spar", rich, [
      { with: "oracle", kind: "fighter", exchanges: 3, last_contact: T0, note: "asked about dates" },
    ]);
    expect(text).toBe(
      [
        "## Creed of spar",
        "Identity: A careful helper.",
        "Traits: patient",
        "Directive: Cite sources",
        "Learned (0.50): Likes tea",
        "Knows fighter oracle: 3 exchange(s), last 2026-01-01 (asked about dates)",
        "History: 1 conversation(s), 2 message(s), 1 bout(s)",
      ].join("\n"),
    );
  });
});
