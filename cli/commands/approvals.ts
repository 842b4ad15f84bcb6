import { SparError } from "../../sdk/errors.js";
import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";

/** A request as `GET /api/v1/approvals` shows it (plugins/policy-approvals/records.ts). */
interface ApprovalView {
  id: string;
  status: string;
  fighter_id: string;
  fighter: string;
  bout_id: string;
  turn_id: string;
  call_id: string;
  origin: string;
  move: string;
  arguments: Record<string, unknown>;
  subject: string;
  cwd: string;
  files: { path: string; sha256: string }[];
  why: string;
  taint?: { kind: string; detail: string; move?: string }[];
  answerers: string[];
  created_at: string;
  expires_at: string;
  answered_by?: string;
  answered_at?: string;
  reason?: string;
  rule_id?: string;
  released_at?: string;
  stale?: string;
}

interface RuleView {
  id: string;
  source: "config" | "stored";
  fighter: string;
  move: string;
  pattern?: string;
  arguments?: string;
  action: string;
  created_at?: string;
  created_by?: string;
}

type ApprovalOptions = GlobalOptions & {
  status?: string;
  limit?: string;
  always?: boolean;
  pattern?: string;
  reason?: string;
};

/** The longest main argument shown in a table; `show` and `--json` have all of it. */
const SHOWN = 60;

const path = (id: string, rest = "") => `/api/v1/approvals/${encodeURIComponent(id)}${rest}`;

/** `spar approvals list|show|approve|deny|rules`; the parser has checked each has its id. */
export async function approvals(action: string, args: string[], options: ApprovalOptions): Promise<void> {
  const id = args[0] ?? "";
  switch (action) {
    case "list":
      return list(options);
    case "show": {
      const request = await api<ApprovalView>("GET", path(id));
      if (options.json) return printJson(request);
      process.stdout.write(`${details(request)}\n`);
      return;
    }
    case "approve":
      return approve(id, options);
    case "deny": {
      const { approval } = await api<{ approval: ApprovalView }>("POST", path(id, "/deny"), {
        ...(options.reason ? { reason: options.reason } : {}),
      });
      if (options.json) return printJson({ approval });
      process.stdout.write(`Denied ${approval.id}: ${approval.fighter}'s ${approval.move} will not run\n`);
      return;
    }
    case "rules":
      return rules(args, options);
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for approvals`);
  }
}

async function list(options: ApprovalOptions): Promise<void> {
  const query = new URLSearchParams({ status: options.status ?? "pending", limit: options.limit ?? "20" });
  const { approvals: requests } = await api<{ approvals: ApprovalView[] }>(
    "GET",
    `/api/v1/approvals?${query}`,
  );
  if (options.json) return printJson({ approvals: requests });
  if (requests.length === 0) {
    process.stdout.write(
      `No ${options.status === "all" ? "" : `${options.status ?? "pending"} `}approval requests.\n`,
    );
    return;
  }
  const rows = requests.map((r) => [
    r.id,
    r.status,
    printable(r.fighter),
    r.move,
    shorten(printable(r.subject)),
    r.status === "pending" ? r.expires_at : (r.answered_by ?? "-"),
  ]);
  process.stdout.write(`${table([["ID", "STATUS", "FIGHTER", "MOVE", "CALL", "EXPIRES / BY"], ...rows])}\n`);
  if (requests.some((r) => r.status === "pending")) {
    process.stdout.write(
      "\nspar approvals show <id> for the whole call; approve <id> or deny <id> to answer.\n",
    );
  }
}

async function approve(id: string, options: ApprovalOptions): Promise<void> {
  if (options.pattern !== undefined && !options.always) {
    throw new SparError("VALIDATION_FAILED", "--pattern goes with --always (the rule it stores)");
  }
  const answer = await api<{ approval: ApprovalView; rule?: RuleView }>("POST", path(id, "/approve"), {
    ...(options.always ? { always: true } : {}),
    ...(options.pattern !== undefined ? { pattern: options.pattern } : {}),
  });
  if (options.json) return printJson(answer);
  const { approval, rule } = answer;
  process.stdout.write(
    `Approved ${approval.id}: ${approval.fighter}'s ${approval.move} runs once, if its files have not changed\n`,
  );
  if (rule) {
    const what =
      rule.pattern !== undefined ? `calls matching ${JSON.stringify(rule.pattern)}` : "this exact call";
    process.stdout.write(
      `Stored rule ${rule.id}: ${approval.fighter} may run ${approval.move} ${what} unasked (spar approvals rules remove ${rule.id} undoes it)\n`,
    );
  }
}

async function rules(args: string[], options: ApprovalOptions): Promise<void> {
  const [sub = "list", id] = args;
  if (sub === "remove") {
    if (!id)
      throw new SparError(
        "VALIDATION_FAILED",
        "approvals rules remove needs <rule-id>; usage: spar approvals rules remove <rule-id>",
      );
    const { removed } = await api<{ removed: RuleView }>(
      "DELETE",
      `/api/v1/approvals/rules/${encodeURIComponent(id)}`,
    );
    if (options.json) return printJson({ removed });
    process.stdout.write(`Removed rule ${removed.id} (${printable(removed.fighter)}, ${removed.move})\n`);
    return;
  }
  if (sub !== "list") {
    throw new SparError("VALIDATION_FAILED", `unknown rules action "${sub}"; rules actions: list, remove`);
  }
  if (id)
    throw new SparError(
      "VALIDATION_FAILED",
      `unexpected argument ${JSON.stringify(id)} for approvals rules list`,
    );
  const { rules: all } = await api<{ rules: RuleView[] }>("GET", "/api/v1/approvals/rules");
  if (options.json) return printJson({ rules: all });
  if (all.length === 0) {
    process.stdout.write(
      "No approval rules: the defaults decide (spar approvals approve --always stores one).\n",
    );
    return;
  }
  const rows = all.map((r) => [
    r.id,
    r.source,
    printable(r.fighter),
    r.move,
    shorten(printable(r.pattern ?? r.arguments ?? "*")),
    r.action,
  ]);
  process.stdout.write(
    `${table([["ID", "SOURCE", "FIGHTER", "MOVE", "PATTERN / CALL", "ACTION"], ...rows])}\n`,
  );
}

function details(r: ApprovalView): string {
  const lines = [
    `${r.id}: ${r.status}`,
    `  fighter     ${printable(r.fighter)} (${r.fighter_id}), ${r.origin}`,
    `  move        ${r.move}`,
    `  call        ${printable(r.subject)}`,
    `  arguments   ${printable(JSON.stringify(r.arguments))}`,
    `  folder      ${printable(r.cwd)}`,
    ...r.files.map((f) => `  file        ${printable(f.path)} sha256 ${f.sha256}`),
    `  why         ${printable(r.why)}`,
    `  asked       ${r.created_at}, expires ${r.expires_at}`,
    `  answered    ${r.answered_by ? `${r.status} by ${printable(r.answered_by)} at ${r.answered_at}` : "-"}`,
  ];
  if (r.reason) lines.push(`  reason      ${printable(r.reason)}`);
  if (r.rule_id) lines.push(`  rule        ${r.rule_id}`);
  if (r.released_at) lines.push(`  ran         ${r.released_at}`);
  if (r.stale) lines.push(`  not run     ${printable(r.stale)}`);
  return lines.join("\n");
}

function shorten(text: string): string {
  const line = text.replace(/\s+/g, " ");
  return line.length > SHOWN ? `${line.slice(0, SHOWN - 1)}…` : line;
}
