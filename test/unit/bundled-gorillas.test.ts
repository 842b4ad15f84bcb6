import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadGorillas } from "../../lib/gorillas/manifest.js";
import { scanEncoded } from "../../lib/skills/scan-decode.js";
import { scanPatterns } from "../../lib/skills/scan-patterns.js";
import { scanInvisible } from "../../lib/skills/scan-text.js";

const ROOT = resolve(import.meta.dirname, "..", "..");
const HOUR = 3_600_000;

/** Every move a bundled plugin declares, with its capability. */
const MOVES = new Map<string, string>(
  readdirSync(join(ROOT, "plugins")).flatMap((id) => {
    let text: string;
    try {
      text = readFileSync(join(ROOT, "plugins", id, "plugin.json"), "utf8");
    } catch {
      return [];
    }
    const manifest = JSON.parse(text) as { contributes?: { moves?: { name: string; capability: string }[] } };
    return (manifest.contributes?.moves ?? []).map((m) => [m.name, m.capability] as [string, string]);
  }),
);

/** The spec's table of bundled gorillas: display name and the time between two cycles. */
const SPEC: Record<string, { display: string; every: number }> = {
  alpha: { display: "Alpha", every: 6 * HOUR },
  ghost: { display: "Ghost", every: HOUR / 2 },
  prophet: { display: "Prophet", every: 24 * HOUR },
  "scout-troop": { display: "Scout Troop", every: 4 * HOUR },
  swarm: { display: "Swarm", every: 3 * HOUR },
  brawler: { display: "Brawler", every: 2 * HOUR },
  howler: { display: "Howler", every: 48 * HOUR },
};

const load = (timezone: string) =>
  loadGorillas([{ dir: join(ROOT, "gorillas"), source: "bundled" }], { moves: MOVES, timezone });
const { gorillas, problems } = load("UTC");

/** The next `count` fires after `from`. */
function fires(next: (after: Date) => Date | null, from: Date, count: number): Date[] {
  const out: Date[] = [];
  let at = from;
  for (let i = 0; i < count; i++) {
    const fire = next(at);
    if (!fire) break;
    out.push(fire);
    at = fire;
  }
  return out;
}

function gaps(times: readonly Date[]): number[] {
  return times.slice(1).map((t, i) => t.getTime() - (times[i] as Date).getTime());
}

describe("the bundled gorillas", () => {
  it("read the real move list", () => {
    expect(MOVES.get("memory_store")).toBe("memory");
    expect(MOVES.get("web_fetch")).toBe("network");
    expect(MOVES.size).toBeGreaterThan(15);
  });

  it("are the spec's seven, all loading, with the spec's names", () => {
    expect(problems).toEqual([]);
    expect(gorillas.map((g) => g.name).sort()).toEqual(Object.keys(SPEC).sort());
    for (const gorilla of gorillas) expect(gorilla.display_name).toBe(SPEC[gorilla.name]?.display);
  });

  it("fire at the spec's intervals, in UTC and in a zone with a half-hour offset", () => {
    for (const timezone of ["UTC", "Asia/Kolkata"]) {
      for (const gorilla of load(timezone).gorillas) {
        const every = SPEC[gorilla.name]?.every as number;
        // A month's end included, so a schedule tied to days of the month would show a short gap.
        const times = fires(gorilla.schedule.next, new Date("2025-01-27T03:17:00Z"), 8);
        expect(times, gorilla.name).toHaveLength(8);
        expect(gaps(times), `${gorilla.name} in ${timezone}`).toEqual(Array(7).fill(every));
        const first = times[0] as Date;
        expect(first.getTime() - Date.parse("2025-01-27T03:17:00Z")).toBeLessThanOrEqual(every);
      }
    }
  });

  it("declare the moves their prompts use, and use every move they declare", () => {
    for (const gorilla of gorillas) {
      const text = `${gorilla.system_prompt}\n${gorilla.task}`;
      const mentioned = [...MOVES.keys()].filter((move) => new RegExp(`\\b${move}\\b`).test(text));
      expect([...mentioned].sort(), gorilla.name).toEqual([...gorilla.moves].sort());
    }
  });

  it("recall their memory before anything else and store what they found", () => {
    for (const gorilla of gorillas) {
      expect(gorilla.moves, gorilla.name).toEqual(expect.arrayContaining(["memory_recall", "memory_store"]));
      const first = gorilla.moves
        .map((move) => ({ move, at: gorilla.task.search(new RegExp(`\\b${move}\\b`)) }))
        .sort((a, b) => a.at - b.at)[0];
      expect(first?.move, gorilla.name).toBe("memory_recall");
      // Every key it stores under is its own: `<name>/…` (scout-troop's start with scout/).
      const prefix = gorilla.name.split("-")[0] as string;
      const keys = [...gorilla.task.matchAll(/\bkey ([a-z][\w-]*\/\S*)/g)].map((m) => m[1] as string);
      expect(keys.length, gorilla.name).toBeGreaterThan(0);
      for (const key of keys) expect(key.startsWith(`${prefix}/`), `${gorilla.name}: ${key}`).toBe(true);
    }
  });

  it("say what the final answer holds, when to stop early, and ask for sources", () => {
    for (const gorilla of gorillas) {
      expect(gorilla.task, gorilla.name).toMatch(/\bAnswer\b/);
      expect(gorilla.task, gorilla.name).toMatch(/\b(Stop|stop|end the cycle|end with)\b/);
      expect(`${gorilla.system_prompt}\n${gorilla.task}`, gorilla.name).toMatch(/[Ss]ources?\b/);
      expect(gorilla.system_prompt, gorilla.name).toMatch(/invent/);
    }
  });

  it("keep their budgets bounded: no runaway bill", () => {
    for (const gorilla of gorillas) {
      const { max_iterations, timeout_s, max_tokens, overlap } = gorilla.settings;
      expect(overlap).toBe("skip");
      expect(max_iterations, gorilla.name).toBeLessThanOrEqual(40);
      expect(max_tokens, gorilla.name).toBeLessThanOrEqual(300_000);
      // A cycle ends well before the next one is due.
      expect(timeout_s * 1000, gorilla.name).toBeLessThan((SPEC[gorilla.name]?.every as number) / 2 + 1);
    }
  });

  it("hold nothing a skill scanner flags, and no address but example.com placeholders", () => {
    for (const gorilla of gorillas) {
      const text = readFileSync(gorilla.file, "utf8");
      const hits = [...scanInvisible(text), ...scanPatterns(text), ...scanEncoded(text)].filter(
        (h) => h.severity !== "low",
      );
      expect(hits, gorilla.name).toEqual([]);
      const urls = text.match(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"')]+/gi) ?? [];
      for (const url of urls) expect(url, gorilla.name).toMatch(/^https:\/\/example\.(com|org)(\/|$)/);
    }
  });
});
