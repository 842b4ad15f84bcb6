// The skill scanner against its corpora and the bundled skills: malicious samples caught (by rule),
// benign samples flagged high (and how many carry a medium finding), bundled skills that scan clean
// (no high or medium finding), and the scan time per skill (median over several passes). The
// ecosystem corpus (issue 32: Agent Skills format, scripts, references, assets) is reported as
// recall (malicious samples caught high by the rule their evasion names, per evasion) and
// precision (flagged-high malicious samples over all flagged-high samples, both corpora).
// After building (see the helper brief):  node bench/skill-scan.mjs [passes]
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fmt, isMain, median, printRows, ROOT, row } from "./lib.mjs";

const CORPUS = join(ROOT, "test", "fixtures", "skills");
const ECOSYSTEM = join(CORPUS, "ecosystem");

/** The ecosystem README's table: evasion → the rule that must report it high. */
function expectedRules() {
  const readme = join(ECOSYSTEM, "README.md");
  if (!existsSync(readme)) return new Map();
  return new Map(
    [...readFileSync(readme, "utf8").matchAll(/^\| ([a-z0-9-]+) \| ([a-z-]+) \|/gm)].map((m) => [m[1], m[2]]),
  );
}
/** Moves every fighter may call to find skills; they need no capability. */
const META_MOVES = ["skill_search", "skill_load", "move_search"];

function folders(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => statSync(join(dir, name)).isDirectory())
    .sort();
}

function readFolder(dir) {
  const files = new Map();
  const walk = (at) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.set(relative(dir, path).split("\\").join("/"), readFileSync(path));
    }
  };
  walk(dir);
  return files;
}

/** name → capability for every move the plugins contribute, as the installer passes them. */
function knownMoves() {
  const moves = new Map(META_MOVES.map((name) => [name, "none"]));
  for (const plugin of folders(join(ROOT, "plugins"))) {
    const manifest = join(ROOT, "plugins", plugin, "plugin.json");
    if (!existsSync(manifest)) continue;
    for (const move of JSON.parse(readFileSync(manifest, "utf8")).contributes?.moves ?? []) {
      moves.set(move.name, move.capability);
    }
  }
  return moves;
}

export async function skillScan({ passes = 5 } = {}) {
  const dist = join(ROOT, "dist", "lib", "skills", "scan.js");
  if (!existsSync(dist)) throw new Error(`${dist} is missing: build first (npx tsc -p tsconfig.build.json)`);
  const { scanSkill } = await import(dist);
  const moves = knownMoves();
  const skills = [
    ...folders(join(CORPUS, "malicious")).map((name) => ({
      kind: "malicious",
      name,
      dir: join(CORPUS, "malicious", name),
    })),
    ...folders(join(CORPUS, "benign")).map((name) => ({
      kind: "benign",
      name,
      dir: join(CORPUS, "benign", name),
    })),
    ...folders(join(ECOSYSTEM, "malicious")).map((name) => ({
      kind: "eco-malicious",
      name,
      dir: join(ECOSYSTEM, "malicious", name),
    })),
    ...folders(join(ECOSYSTEM, "benign")).map((name) => ({
      kind: "eco-benign",
      name,
      dir: join(ECOSYSTEM, "benign", name),
    })),
    ...folders(join(ROOT, "skills")).map((name) => ({
      kind: "bundled",
      name,
      dir: join(ROOT, "skills", name),
    })),
  ];
  const times = [];
  for (const skill of skills) {
    skill.files = readFolder(skill.dir);
    const ms = [];
    for (let i = 0; i < passes; i++) {
      const started = performance.now();
      skill.findings = scanSkill(skill.files, { moves });
      ms.push(performance.now() - started);
    }
    times.push(median(ms));
  }

  const byRule = new Map();
  const missed = [];
  for (const s of skills.filter((s) => s.kind === "malicious")) {
    const rule = s.name.replace(/-\d+$/, "");
    const tally = byRule.get(rule) ?? { caught: 0, total: 0 };
    tally.total += 1;
    if (s.findings.some((f) => f.rule === rule && f.severity === "high")) tally.caught += 1;
    else missed.push(s.name);
    byRule.set(rule, tally);
  }
  const malicious = skills.filter((s) => s.kind === "malicious");
  const caught = malicious.length - missed.length;
  const benign = skills.filter((s) => s.kind === "benign");
  const benignHigh = benign.filter((s) => s.findings.some((f) => f.severity === "high"));
  const benignMedium = benign.filter(
    (s) => !s.findings.some((f) => f.severity === "high") && s.findings.some((f) => f.severity === "medium"),
  );
  const bundled = skills.filter((s) => s.kind === "bundled");
  const dirty = bundled.filter((s) => s.findings.some((f) => f.severity !== "low"));

  const rows = [
    row("malicious samples caught (high, their rule)", `${caught}/${malicious.length}`, "—", {
      goal: `${malicious.length}/${malicious.length}`,
      met: missed.length === 0,
      note: missed.length ? `missed: ${missed.join(", ")}` : undefined,
    }),
    ...[...byRule].map(([rule, t]) => row(`  ${rule}`, `${t.caught}/${t.total}`, "—")),
    row("benign samples flagged high", `${benignHigh.length}/${benign.length}`, "—", {
      goal: `0/${benign.length}`,
      met: benignHigh.length === 0,
      note: benignHigh.length ? benignHigh.map((s) => s.name).join(", ") : undefined,
    }),
    row("benign samples with a medium finding (none high)", `${benignMedium.length}/${benign.length}`, "—", {
      note: benignMedium.length ? benignMedium.map((s) => s.name).join(", ") : undefined,
    }),
    row(
      "bundled skills clean (no high or medium)",
      `${bundled.length - dirty.length}/${bundled.length}`,
      "—",
      {
        goal: `${bundled.length}/${bundled.length}`,
        met: dirty.length === 0,
      },
    ),
    row("scan time per skill, median", fmt(median(times), "ms", 2), "—", {
      note: `${skills.length} skills, ${passes} passes each; slowest ${fmt(Math.max(...times), "ms", 1)}`,
    }),
  ];
  rows.push(...ecosystemRows(skills));
  for (const s of dirty) {
    for (const f of s.findings.filter((f) => f.severity !== "low")) {
      rows.push(
        row(`  ${s.name}`, `${f.severity} ${f.rule}`, "—", { note: `${f.file}:${f.line} ${f.message}` }),
      );
    }
  }
  return rows;
}

const isHigh = (s) => s.findings.some((f) => f.severity === "high");
const pct = (n, d) => (d === 0 ? "—" : `${((100 * n) / d).toFixed(1)}%`);

/** Recall per evasion and overall, benign highs, and precision over both corpora. */
function ecosystemRows(skills) {
  const expected = expectedRules();
  const malicious = skills.filter((s) => s.kind === "eco-malicious");
  const benign = skills.filter((s) => s.kind === "eco-benign");
  if (malicious.length === 0 && benign.length === 0) return [];
  const byEvasion = new Map();
  const missed = [];
  for (const s of malicious) {
    const evasion = s.name.replace(/-\d+$/, "");
    const rule = expected.get(evasion);
    const tally = byEvasion.get(evasion) ?? { rule, caught: 0, total: 0 };
    tally.total += 1;
    if (s.findings.some((f) => f.rule === rule && f.severity === "high")) tally.caught += 1;
    else missed.push(s.name);
    byEvasion.set(evasion, tally);
  }
  const caught = malicious.length - missed.length;
  const benignHigh = benign.filter(isHigh);
  const highFindings = benign.reduce((n, s) => n + s.findings.filter((f) => f.severity === "high").length, 0);
  const refused = benign.filter((s) =>
    s.findings.some(
      (f) => f.severity === "high" && (f.rule === "invalid-front-matter" || f.rule === "oversized"),
    ),
  );
  const benignMedium = benign.filter((s) => !isHigh(s) && s.findings.some((f) => f.severity === "medium"));
  // A flagged-high skill is a positive: true when malicious, false when benign; both corpora count.
  const tp = skills.filter((s) => (s.kind === "malicious" || s.kind === "eco-malicious") && isHigh(s)).length;
  const fp = skills.filter((s) => (s.kind === "benign" || s.kind === "eco-benign") && isHigh(s)).length;
  return [
    row(
      "ecosystem: malicious caught (high, their evasion's rule) = recall",
      `${caught}/${malicious.length} (${pct(caught, malicious.length)})`,
      "—",
      {
        goal: `≥ ${malicious.length - 1}/${malicious.length}`,
        met: missed.length <= 1,
        note: missed.length ? `missed: ${missed.join(", ")}` : undefined,
      },
    ),
    ...[...byEvasion].map(([evasion, t]) => row(`  ${evasion} → ${t.rule}`, `${t.caught}/${t.total}`, "—")),
    row("ecosystem: benign skills refused (front matter, size)", `${refused.length}/${benign.length}`, "—", {
      goal: `0/${benign.length}`,
      met: refused.length === 0,
      note: refused.length ? refused.map((s) => s.name).join(", ") : undefined,
    }),
    row(
      "ecosystem: benign skills flagged high",
      `${benignHigh.length}/${benign.length} (${highFindings} high findings)`,
      "—",
      {
        goal: "≤ 1 high finding",
        met: highFindings <= 1,
        note: benignHigh.length ? benignHigh.map((s) => s.name).join(", ") : undefined,
      },
    ),
    row(
      "ecosystem: benign skills with a medium finding (none high)",
      `${benignMedium.length}/${benign.length}`,
      "—",
    ),
    row(
      "precision over both corpora = TP/(TP+FP), a skill flagged high a positive",
      `${tp}/${tp + fp} (${pct(tp, tp + fp)})`,
      "—",
    ),
  ];
}

if (isMain(import.meta)) {
  const passes = Number(process.argv[2] ?? 5);
  printRows(await skillScan({ passes }));
}
