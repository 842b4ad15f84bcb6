// 9. The skill scanner on its corpora (bench/skill-scan.mjs): recall and precision on the malicious
// and benign samples, the bundled skills, and the scan time. Part of `npm run bench`, so a full run
// writes its figures to RESULTS.md with the rest; `node bench/skill-scan.mjs` prints them alone.
import { skillScan } from "../skill-scan.mjs";
import { figure } from "../suite/report.mjs";

export async function skills({ passes }) {
  const rows = await skillScan({ passes });
  return {
    title: "9. Skill scanner (test/fixtures/skills, node bench/skill-scan.mjs)",
    notes: rows.filter((r) => r.note).map((r) => `${r.figure.trim()}: ${r.note}`),
    figures: rows.map((r) =>
      figure({
        label: r.figure,
        measured: r.spar,
        baseline: r.baseline === "—" ? "" : r.baseline,
        goal: r.goal === "—" ? "" : r.goal,
        met: r.met,
      }),
    ),
  };
}
