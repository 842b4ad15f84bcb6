/**
 * `spar move info|verify|update`: what the lock file knows about installed skills, checked against
 * the disk and against their source. The daemon does the work (GET /api/v1/moves/skills/:name, GET
 * /api/v1/moves/verify, POST /api/v1/moves/update); this prints it and asks before an update installs.
 */
import type { Finding } from "../../lib/skills/scan.js";

import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";
import { printFindings } from "./move.js";

type Options = GlobalOptions & { ref?: string; yes?: boolean; force?: boolean };

interface LockFinding {
  rule: string;
  severity: string;
  file: string;
  line?: number;
  message?: string;
}

interface Info {
  name: string;
  source: string;
  ref?: string;
  resolved?: string;
  path?: string;
  version: string;
  installed_at?: string;
  forced?: boolean;
  sha256?: string;
  dir: string;
  files?: { path: string; sha256: string; size: number | null }[] | null;
  findings?: LockFinding[];
}

export async function info(name: string, options: Options): Promise<void> {
  const skill = await api<Info>("GET", `/api/v1/moves/skills/${encodeURIComponent(name)}`);
  if (options.json) return printJson(skill);
  if (skill.source === "bundled") {
    process.stdout.write(`${skill.name} ${skill.version}: bundled with Spar (${skill.dir})\n`);
    return;
  }
  const rows: [string, string][] = [
    ["name", skill.name],
    ["source", skill.source],
    ...(skill.ref ? [["ref", skill.ref] as [string, string]] : []),
    ...(skill.resolved ? [["resolved", skill.resolved] as [string, string]] : []),
    ...(skill.path ? [["path", skill.path] as [string, string]] : []),
    ["version", skill.version],
    ["installed", skill.installed_at ?? ""],
    ["forced", skill.forced ? "yes (installed past high findings)" : "no"],
    ["sha256", skill.sha256 ?? ""],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [key, value] of rows) process.stdout.write(`${key.padEnd(width)}  ${printable(value)}\n`);
  if (!skill.files) {
    process.stdout.write(
      "files     (no per-file hashes: installed by an older Spar; install it again to record them)\n",
    );
  } else {
    process.stdout.write(`files     ${skill.files.length}\n`);
    const lines = skill.files.map((f) => [
      `  ${printable(f.path)}`,
      f.size === null ? "missing" : `${f.size} B`,
      f.sha256,
    ]);
    process.stdout.write(`${table(lines)}\n`);
  }
  const findings = skill.findings ?? [];
  process.stdout.write(findings.length === 0 ? "findings  none\n" : `findings  ${findings.length}\n`);
  for (const f of findings) {
    process.stdout.write(
      `  ${f.severity.toUpperCase().padEnd(6)} ${f.rule}  ${printable(f.file)}${f.line ? `:${f.line}` : ""}  ${printable(f.message ?? "")}\n`,
    );
  }
}

interface VerifyReport {
  name: string;
  ok: boolean;
  changed: string[];
  missing: string[];
  extra: string[];
  note?: string;
}

export async function verify(name: string | undefined, options: Options): Promise<void> {
  const query = name === undefined ? "" : `?name=${encodeURIComponent(name)}`;
  const result = await api<{ ok: boolean; skills: VerifyReport[] }>("GET", `/api/v1/moves/verify${query}`);
  if (!result.ok) process.exitCode = 1;
  if (options.json) return printJson(result);
  if (result.skills.length === 0) {
    process.stdout.write("no installed skills to verify (bundled ones ship with Spar)\n");
    return;
  }
  for (const s of result.skills) {
    const parts = [
      ...s.changed.map((p) => `changed ${p}`),
      ...s.missing.map((p) => `missing ${p}`),
      ...s.extra.map((p) => `extra ${p}`),
    ];
    process.stdout.write(`${s.name}: ${s.ok ? "ok" : printable(parts.join(", "))}\n`);
    if (s.note && !s.ok) process.stdout.write(`  ${printable(s.note)}\n`);
  }
  const bad = result.skills.filter((s) => !s.ok).length;
  process.stdout.write(
    bad === 0
      ? `${result.skills.length} skill(s) match the lock\n`
      : `${bad} of ${result.skills.length} skill(s) differ from what was installed; spar move update or install --replace puts them back\n`,
  );
}

interface Plan {
  name: string;
  status: "changed" | "up_to_date" | "pinned" | "local" | "gone" | "error";
  source: string;
  message?: string;
  from?: { version: string; resolved?: string };
  to?: { version: string; resolved: string; sha256: string };
  files?: { added: string[]; removed: string[]; changed: string[] };
  findings?: { new: Finding[]; removed: LockFinding[] };
  high?: number;
  error?: { code: string; message: string };
}

export async function update(name: string | undefined, options: Options): Promise<void> {
  const ask = {
    ...(name === undefined ? {} : { name }),
    ...(options.ref === undefined ? {} : { ref: options.ref }),
  };
  const planned = await api<{ skills: Plan[] }>("POST", "/api/v1/moves/update", ask);
  const changed = planned.skills.filter((p) => p.status === "changed");
  if (planned.skills.some((p) => p.status === "error" || p.status === "gone")) process.exitCode = 1;
  if (!options.json) printPlan(planned.skills);
  if (changed.length === 0) {
    if (options.json) printJson({ ...planned, installed: [] });
    return;
  }
  if (!(await consent(changed.length, options))) {
    if (options.json) printJson({ ...planned, installed: [] });
    return;
  }
  const result = await api<{ skills: Plan[]; installed: string[]; modified?: string[] }>(
    "POST",
    "/api/v1/moves/update",
    {
      ...ask,
      install: true,
      ...(options.force ? { force: true } : {}),
      expect: Object.fromEntries(changed.map((p) => [p.name, p.to?.sha256 as string])),
    },
  );
  if (options.json) return printJson(result);
  for (const line of result.modified ?? []) process.stdout.write(`note: ${printable(line)}\n`);
  for (const n of result.installed) {
    const p = changed.find((c) => c.name === n);
    process.stdout.write(
      `updated ${n} to ${p?.to?.version ?? "?"} at ${printable(p?.to?.resolved ?? "?")}\n`,
    );
  }
}

const short = (id: string | undefined) =>
  id && /^[0-9a-f]{40,64}$/.test(id) ? id.slice(0, 12) : (id ?? "?");

function printPlan(plans: readonly Plan[]): void {
  for (const p of plans) {
    switch (p.status) {
      case "up_to_date":
        process.stdout.write(`${p.name}: up to date (${printable(short(p.to?.resolved))})\n`);
        break;
      case "pinned":
      case "local":
      case "gone":
        process.stdout.write(`${p.name}: ${printable(p.message ?? p.status)}\n`);
        break;
      case "error":
        process.stdout.write(`${p.name}: ${printable(p.error?.message ?? "")} (${p.error?.code})\n`);
        break;
      case "changed": {
        const from = `${p.from?.version} (${printable(short(p.from?.resolved))})`;
        const to = `${p.to?.version} (${printable(short(p.to?.resolved))})`;
        process.stdout.write(`${p.name}: ${from} → ${to} from ${printable(p.source)}\n`);
        const files = p.files ?? { added: [], removed: [], changed: [] };
        for (const f of files.added) process.stdout.write(`  + ${printable(f)}\n`);
        for (const f of files.removed) process.stdout.write(`  - ${printable(f)}\n`);
        for (const f of files.changed) process.stdout.write(`  ~ ${printable(f)}\n`);
        const fresh = p.findings?.new ?? [];
        const gone = p.findings?.removed ?? [];
        process.stdout.write(
          fresh.length === 0 ? "  no new findings\n" : `  ${fresh.length} new finding(s):\n`,
        );
        printFindings(fresh);
        for (const f of gone) {
          process.stdout.write(`  no longer: ${f.severity} ${f.rule} ${printable(f.file)}\n`);
        }
        if ((p.high ?? 0) > 0) {
          process.stdout.write(`  ${p.high} high-severity finding(s): installing needs --force (recorded)\n`);
        }
        break;
      }
    }
  }
}

/** --yes, or a y on a terminal; without a terminal (or with --json) and without --yes, nothing is installed. */
async function consent(count: number, options: Options): Promise<boolean> {
  if (options.yes) return true;
  if (options.json || !process.stdin.isTTY || !process.stdout.isTTY) {
    if (!options.json) {
      process.stdout.write(
        `not installed: ${count} update(s) shown above; run with --yes to install them (or on a terminal to be asked)\n`,
      );
    }
    return false;
  }
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await rl.question(`Install ${count} update(s)? [y/N] `);
    const yes = /^y(es)?$/i.test(answer.trim());
    if (!yes) process.stdout.write("nothing installed\n");
    return yes;
  } finally {
    rl.close();
  }
}
