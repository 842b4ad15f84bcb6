// A run's figures: printed as each part finishes, and written to a Markdown file at the end.
// A part returns { title, notes: [lines], figures: [figure(...)] }.
import { writeFileSync } from "node:fs";
import { num } from "./stats.mjs";

/**
 * One measured figure. `measured` and `baseline` are text ("412 ms (min 398, max 450)"); `ratio` the
 * measured/baseline ratio when the goal is one; `goal` its text ("≤ 1.5×"), `met` true/false, or
 * undefined when there is no goal or the figure could not be measured.
 */
export function figure({ label, measured, baseline = "", ratio, goal = "", met }) {
  return { label, measured, baseline, ratio, goal, met };
}

export const verdict = (f) =>
  f.met === undefined ? (f.goal ? "not measured" : "") : f.met ? "met" : "NOT MET";
/** Three decimals below 10× (so 1.203× is not shown as a 1.20× that misses a ≤ 1.2× goal), one above. */
const ratioText = (f) => (f.ratio === undefined ? "" : `${num(f.ratio, f.ratio < 10 ? 3 : 1)}×`);

export function printPart(part) {
  console.log(`\n== ${part.title} ==`);
  for (const note of part.notes ?? []) console.log(`   ${note}`);
  for (const f of part.figures) {
    console.log(`   ${f.label}`);
    console.log(`      measured  ${f.measured}`);
    if (f.baseline) {
      const ratio = f.ratio === undefined ? "" : `   (ratio ${ratioText(f)})`;
      console.log(`      baseline  ${f.baseline}${ratio}`);
    }
    if (f.goal) console.log(`      goal      ${f.goal}: ${verdict(f)}`);
  }
}

const cell = (text) => String(text).replaceAll("|", "\\|");

export function markdown({ machine, parts, command, counts }) {
  const lines = [
    "# Spar benchmarks",
    "",
    `Written by \`${command}\` on ${machine.date}. Every figure is measured beside its baseline in the`,
    "same run, against a fake OpenAI-compatible model server on 127.0.0.1 that answers at once",
    "(streamed chat-completions SSE), so what is measured is the server under test, not the model.",
    "",
    "## Machine",
    "",
    `- CPU: ${machine.cpu}, ${machine.cores} cores`,
    `- Memory: ${machine.memory}`,
    `- Node.js: ${machine.node} (${machine.kernel})`,
    `- Checkout: ${machine.checkout}`,
    `- Date: ${machine.date}`,
    `- Load average (1 min) when the run began: ${machine.load}; at its end: ${machine.loadAtEnd ?? "n/a"} (the benchmarks share 2 cores: anything else running skews them)`,
    "",
    "## Summary",
    "",
    "| Figure | Measured | Baseline | Ratio | Goal | Result |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const part of parts) {
    for (const f of part.figures) {
      lines.push(
        `| ${cell(f.label)} | ${cell(f.measured)} | ${cell(f.baseline)} | ${ratioText(f)} | ${cell(f.goal)} | ${verdict(f)} |`,
      );
    }
  }
  const withGoals = parts.flatMap((p) => p.figures).filter((f) => f.goal);
  const missed = withGoals.filter((f) => f.met !== true);
  lines.push("");
  lines.push(
    withGoals.length === 0
      ? "No figure of this run has a goal."
      : missed.length
        ? `**Goals not met (${missed.length}):** ${missed.map((f) => `${f.label} (${f.met === undefined ? "not measured" : `${f.measured}${f.ratio === undefined ? "" : `, ${ratioText(f)}`}; goal ${f.goal}`})`).join("; ")}.`
        : "Every goal was met.",
  );
  const failed = parts.filter((p) => p.failed);
  if (failed.length)
    lines.push("", `**Parts that failed and measured nothing:** ${failed.map((p) => p.title).join(", ")}.`);
  for (const part of parts) {
    lines.push("", `## ${part.title}`, "");
    for (const note of part.notes ?? []) lines.push(`- ${note}`);
  }
  lines.push(
    "",
    "## Reproduce",
    "",
    "```sh",
    "npm ci && npm run build",
    "npm run bench                         # every part (see the counts below), writes bench/RESULTS.md",
    "npm run bench -- startup              # one part: startup, overhead, throughput, ws, soak, listing, prompt",
    "npm run bench -- overhead --write     # a partial run rewrites RESULTS.md only when asked",
    "npm run bench -- overhead --messages 2000   # N sequential messages for the overhead part (default 500)",
    "npm run bench -- --profile            # CPU profiles of a start and a message burst in bench/profiles/",
    "BENCH_OPENCLAW=1 npm run bench -- openclaw   # opt-in: OpenClaw on Node 24 beside Spar",
    "```",
    "",
    `Counts used in this run: ${counts}.`,
    "",
  );
  return lines.join("\n");
}

export function writeReport(file, report) {
  writeFileSync(file, markdown(report));
}
