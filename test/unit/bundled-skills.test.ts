import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSkills, readSkillFile } from "../../lib/skills/catalog.js";

const ROOT = resolve(import.meta.dirname, "..", "..");
const { skills, problems } = loadSkills([
  { dir: join(ROOT, "skills"), pack: "skill-pack-bundled", source: "bundled" },
]);

/** Every move a bundled plugin declares, with its capability. */
const MOVES = new Map<string, string>(
  readdirSync(join(ROOT, "plugins")).flatMap((id) => {
    try {
      const manifest = JSON.parse(readFileSync(join(ROOT, "plugins", id, "plugin.json"), "utf8")) as {
        contributes?: { moves?: { name: string; capability: string }[] };
      };
      return (manifest.contributes?.moves ?? []).map((m) => [m.name, m.capability] as [string, string]);
    } catch {
      return [];
    }
  }),
);

/** Five-word shingles of a text, for a near-duplicate measure (Jaccard similarity of two bodies). */
function shingles(text: string): Set<string> {
  const words = text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  const out = new Set<string>();
  for (let i = 0; i + 5 <= words.length; i++) out.add(words.slice(i, i + 5).join(" "));
  return out;
}

describe("the bundled skills", () => {
  it("are 103, all loading, in about 15 categories", () => {
    expect(problems).toEqual([]);
    expect(skills).toHaveLength(103);
    expect(new Set(skills.map((s) => s.category)).size).toBe(15);
  });

  it("use only moves that exist, and declare exactly the capabilities those moves need", () => {
    for (const skill of skills) {
      for (const move of skill.moves) expect(MOVES.has(move), `${skill.name}: ${move}`).toBe(true);
      const needed = [...new Set(skill.moves.map((m) => MOVES.get(m)))].sort();
      expect([...skill.capabilities].sort(), skill.name).toEqual(needed);
    }
  });

  it("have the sections a model acts on, and every resource file is asked for by the body", () => {
    for (const skill of skills) {
      const body = readSkillFile(skill);
      for (const heading of ["## When to use", "## Steps", "## Pitfalls", "## Example", "## Output format"]) {
        expect(body, `${skill.name}: ${heading}`).toContain(heading);
      }
      for (const file of skill.resources) expect(body, `${skill.name} reads ${file}`).toContain(file);
    }
  });

  it("are no two alike: no pair of bodies shares more than 10% of its five-word runs", () => {
    const sets = skills.map((s) => ({ name: s.name, set: shingles(readSkillFile(s)) }));
    let worst = { pair: "", similarity: 0 };
    for (let i = 0; i < sets.length; i++) {
      for (let j = i + 1; j < sets.length; j++) {
        const a = sets[i] as (typeof sets)[number];
        const b = sets[j] as (typeof sets)[number];
        let shared = 0;
        for (const s of a.set) if (b.set.has(s)) shared++;
        const similarity = shared / (a.set.size + b.set.size - shared);
        if (similarity > worst.similarity) worst = { pair: `${a.name} / ${b.name}`, similarity };
      }
    }
    expect(worst.similarity, worst.pair).toBeLessThan(0.1);
  });
});
