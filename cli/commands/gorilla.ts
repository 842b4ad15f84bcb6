import type { GorillaRunRecord } from "../../lib/gorillas/records.js";
import { SparError } from "../../sdk/errors.js";
import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";

/** A gorilla as the daemon shows it (lib/gorillas/view.ts). */
interface GorillaView {
  name: string;
  display_name: string;
  description: string;
  schedule: string;
  timezone: string;
  state: "CAGED" | "UNLEASHED" | "RAMPAGING";
  next_run_at: string | null;
  last_run: GorillaRunRecord | null;
  moves: string[];
  source: "bundled" | "user";
  /** Caged by a budget: why, and when it is unleashed by itself. */
  caged_reason?: string;
  caged_until?: string;
}

interface GorillaDetail extends GorillaView {
  fighter: string;
  settings: { max_iterations: number; timeout_s: number; max_tokens: number; catch_up: string };
  running_run_id: string | null;
  file: string;
}

type GorillaOptions = GlobalOptions & { limit?: string; before?: string };

const path = (name: string, rest = "") => `/api/v1/gorillas/${encodeURIComponent(name)}${rest}`;

/** `spar gorilla list|status|unleash|cage|run|runs|reload`; the parser has checked that each has its name. */
export async function gorilla(
  action: string,
  name: string | undefined,
  options: GorillaOptions,
): Promise<void> {
  const target = name ?? "";
  switch (action) {
    case "list":
      return list(options);
    case "status":
      return status(target, options);
    case "unleash": {
      const view = await api<GorillaView>("POST", path(target, "/unleash"));
      if (options.json) return printJson(view);
      process.stdout.write(`${view.name} is UNLEASHED; next run ${view.next_run_at ?? "never"}\n`);
      return;
    }
    case "cage": {
      const view = await api<GorillaView & { aborted_run_id: string | null }>("POST", path(target, "/cage"));
      if (options.json) return printJson(view);
      const aborted = view.aborted_run_id
        ? `; its running cycle (run ${view.aborted_run_id}) was aborted`
        : "";
      process.stdout.write(`${view.name} is CAGED${aborted}\n`);
      return;
    }
    case "run": {
      const run = await api<GorillaRunRecord>("POST", path(target, "/run"));
      if (options.json) return printJson(run);
      process.stdout.write(
        `${target}: cycle started, run ${run.id} (spar gorilla runs ${target} shows how it ends)\n`,
      );
      return;
    }
    case "runs":
      return runs(target, options);
    case "reload":
      return reload(options);
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for gorilla`);
  }
}

async function list(options: GorillaOptions): Promise<void> {
  const listed = await api<{ gorillas: GorillaView[]; problems: { file: string; error: string }[] }>(
    "GET",
    "/api/v1/gorillas",
  );
  if (options.json) return printJson(listed);
  const rows = listed.gorillas.map((g) => [
    g.name,
    g.caged_until ? `${g.state} (budget, until ${g.caged_until})` : g.state,
    g.schedule,
    g.next_run_at ?? "-",
    g.last_run ? `${g.last_run.outcome} ${g.last_run.started_at}` : "-",
    g.source,
  ]);
  process.stdout.write(
    `${table([["NAME", "STATE", "SCHEDULE", "NEXT RUN", "LAST RUN", "SOURCE"], ...rows])}\n`,
  );
  if (listed.problems.length > 0) {
    process.stdout.write(`\nNot loaded (${listed.problems.length}):\n`);
    for (const p of listed.problems) process.stdout.write(`  ${printable(p.error)}\n`);
  }
}

/** `spar gorilla reload`: the daemon reads the folders again; exit 1 while a file does not load. */
async function reload(options: GorillaOptions): Promise<void> {
  const result = await api<{
    gorillas: GorillaView[];
    problems: { file: string; error: string }[];
    added: string[];
    removed: string[];
  }>("POST", "/api/v1/gorillas/reload");
  if (result.problems.length > 0) process.exitCode = 1;
  if (options.json) return printJson(result);
  const changes = [
    result.added.length > 0 ? `added ${result.added.join(", ")}` : "",
    result.removed.length > 0 ? `removed ${result.removed.join(", ")}` : "",
  ].filter(Boolean);
  process.stdout.write(
    `Reloaded: ${result.gorillas.length} gorillas loaded${changes.length > 0 ? ` (${changes.join("; ")})` : ""}
`,
  );
  if (result.problems.length > 0) {
    process.stdout.write(`Not loaded (${result.problems.length}):
`);
    for (const p of result.problems)
      process.stdout.write(`  ${printable(p.error)}
`);
  }
}

async function status(name: string, options: GorillaOptions): Promise<void> {
  const g = await api<GorillaDetail>("GET", path(name));
  if (options.json) return printJson(g);
  const s = g.settings;
  const last = g.last_run;
  const lines = [
    `${g.display_name} (${g.name}, ${g.source}): ${g.state}`,
    `  ${printable(g.description)}`,
    `  schedule    ${g.schedule} (${g.timezone})`,
    `  next run    ${g.next_run_at ?? "- (caged)"}`,
    ...(g.caged_reason
      ? [`  caged       by a budget until ${g.caged_until}: ${printable(g.caged_reason)}`]
      : []),
    `  last run    ${last ? `${last.outcome} at ${last.started_at}${last.error ? `: ${printable(last.error)}` : ""}` : "-"}`,
    `  running     ${g.running_run_id ?? "-"}`,
    `  budgets     ${s.max_iterations} model calls, ${s.timeout_s} s, ${s.max_tokens} tokens per cycle; catch_up ${s.catch_up}`,
    `  moves       ${g.moves.join(", ") || "-"}`,
    `  fighter     ${g.fighter}`,
    `  file        ${g.file}`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

async function runs(name: string, options: GorillaOptions): Promise<void> {
  const query = new URLSearchParams();
  if (options.limit) query.set("limit", options.limit);
  if (options.before) query.set("before", options.before);
  const suffix = query.size > 0 ? `?${query}` : "";
  const { runs: records } = await api<{ runs: GorillaRunRecord[] }>("GET", path(name, `/runs${suffix}`));
  if (options.json) return printJson({ runs: records });
  if (records.length === 0) {
    process.stdout.write(`${name} has no runs yet (spar gorilla run ${name} starts one now)\n`);
    return;
  }
  const rows = records.map((r) => [
    r.id,
    r.trigger,
    r.outcome,
    r.started_at,
    r.finished_at ? `${((Date.parse(r.finished_at) - Date.parse(r.started_at)) / 1000).toFixed(1)} s` : "-",
    String(r.usage.input_tokens + r.usage.output_tokens),
    printable(oneLine(r.error ?? r.output ?? "")),
  ]);
  process.stdout.write(
    `${table([["RUN", "TRIGGER", "OUTCOME", "STARTED", "TOOK", "TOKENS", "RESULT / ERROR"], ...rows])}\n`,
  );
}

/** The first line of a result, cut to fit a table. */
function oneLine(text: string): string {
  const first = text.trim().split("\n")[0] ?? "";
  return first.length > 80 ? `${first.slice(0, 79)}…` : first;
}
