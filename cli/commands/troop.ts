/**
 * `spar troop`: several fighters working on one task under a strategy (plugins/troops-local serves
 * the routes). The daemon names fighters by id; a troop it returns carries `names` for the fighters
 * that still exist, so every line here shows names, and an id without one as `<id> (gone)`.
 * `task` waits for the task to end by default (by polling it, so no request outlives fetch's limits)
 * and exits 1 unless it completed; `--async` returns at once with the id to follow (`show <troop>
 * <task>` shows it).
 */
import type { TroopRecord, TroopTaskRecord } from "../../lib/troops/records.js";
import { SparError } from "../../sdk/errors.js";

import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";

/** A troop as the daemon shows it: the record plus the names of its fighters that still exist. */
interface TroopView extends TroopRecord {
  names: Record<string, string>;
}

type TroopOptions = GlobalOptions & {
  name?: string;
  leader?: string;
  members?: string;
  strategy?: string;
  async?: boolean;
  limit?: string;
};

const path = (troop: string, rest = "") => `/api/v1/troops/${encodeURIComponent(troop)}${rest}`;

/** `spar troop create|list|show|task|tasks|cancel|disband`; the parser has checked the arguments. */
export async function troop(action: string, args: string[], options: TroopOptions): Promise<void> {
  const [target = "", second = ""] = args;
  switch (action) {
    case "create":
      return create(target, options);
    case "edit":
      return edit(target, options);
    case "list":
      return list(options);
    case "show":
      return second ? showTask(target, second, options) : show(target, options);
    case "task":
      return task(target, second, options);
    case "tasks":
      return tasks(target, options);
    case "cancel": {
      const cancelled = await api<TroopTaskRecord>(
        "POST",
        path(target, `/tasks/${encodeURIComponent(second)}/cancel`),
      );
      if (options.json) return printJson(cancelled);
      process.stdout.write(`Task ${cancelled.id} of ${target} is ${cancelled.status}\n`);
      return;
    }
    case "disband": {
      const gone = await api<{ id: string; name: string; cancelled_tasks: number }>("DELETE", path(target));
      if (options.json) return printJson(gone);
      const cancelled =
        gone.cancelled_tasks > 0 ? `; ${plural(gone.cancelled_tasks, "unfinished task")} cancelled` : "";
      process.stdout.write(`Disbanded troop ${gone.name} (${gone.id})${cancelled}\n`);
      return;
    }
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for troop`);
  }
}

async function create(name: string, options: TroopOptions): Promise<void> {
  const { leader, strategy } = options;
  const members = memberList(options.members);
  const missing = [
    leader ? "" : "--leader <fighter>",
    members.length > 0 ? "" : "--members <a,b,c>",
    strategy ? "" : "--strategy <name>",
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new SparError("VALIDATION_FAILED", `troop create needs ${missing.join(", ")}`);
  }
  const created = await api<TroopView>("POST", "/api/v1/troops", { name, leader, members, strategy }).catch(
    (err: unknown) => {
      throw withAvailable(err);
    },
  );
  if (options.json) return printJson(created);
  process.stdout.write(`Created troop ${describe(created)}\n`);
}

/** The comma-separated `--members`, each trimmed, empty ones dropped. */
function memberList(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);
}

/** `spar troop edit`: changes what the options name, checked by the daemon as at creation. */
async function edit(target: string, options: TroopOptions): Promise<void> {
  const { name, leader, strategy } = options;
  const changes = {
    ...(name !== undefined ? { name } : {}),
    ...(leader !== undefined ? { leader } : {}),
    ...(options.members !== undefined ? { members: memberList(options.members) } : {}),
    ...(strategy !== undefined ? { strategy } : {}),
  };
  if (Object.keys(changes).length === 0) {
    throw new SparError(
      "VALIDATION_FAILED",
      "troop edit needs at least one of --name <name>, --leader <fighter>, --members <a,b,c>, --strategy <name>",
    );
  }
  if (changes.members?.length === 0) {
    throw new SparError("VALIDATION_FAILED", "--members needs at least one fighter: --members <a,b,c>");
  }
  const edited = await api<TroopView>("PATCH", path(target), changes).catch((err: unknown) => {
    throw withAvailable(err);
  });
  if (options.json) return printJson(edited);
  process.stdout.write(`Edited troop ${describe(edited)}\n`);
}

/** An unknown strategy's error, with the daemon's `available` strategies in its message if not already there. */
function withAvailable(err: unknown): unknown {
  if (!(err instanceof SparError)) return err;
  const { available } = err.extra;
  if (!Array.isArray(available) || available.every((s) => err.message.includes(s))) return err;
  return new SparError(err.code, `${err.message}; available: ${available.join(", ")}`, err.extra);
}

async function list(options: TroopOptions): Promise<void> {
  const listed = await api<{ troops: TroopView[] }>("GET", "/api/v1/troops");
  if (options.json) return printJson(listed);
  if (listed.troops.length === 0) {
    process.stdout.write(
      "No troops yet; spar troop create <name> --leader <fighter> --members <a,b,c> --strategy <name> makes one\n",
    );
    return;
  }
  const rows = listed.troops.map((t) => [
    t.name,
    t.strategy,
    nameOf(t, t.leader),
    t.members.map((m) => nameOf(t, m)).join(", "),
    t.id,
  ]);
  process.stdout.write(`${table([["NAME", "STRATEGY", "LEADER", "MEMBERS", "ID"], ...rows])}\n`);
}

async function show(target: string, options: TroopOptions): Promise<void> {
  const found = await api<TroopView>("GET", path(target));
  const { tasks: latest } = await api<{ tasks: TroopTaskRecord[] }>("GET", path(found.id, "/tasks?limit=10"));
  if (options.json) return printJson({ troop: found, tasks: latest });
  const shown =
    latest.length === 0
      ? `No tasks yet; spar troop task ${found.name} "<task>" runs one`
      : `Latest tasks:\n${taskTable(latest)}`;
  process.stdout.write(`Troop ${describe(found)}\n\n${shown}\n`);
}

/**
 * One task of a troop as it stands (an `--async` one while it runs, or after): what was asked, its
 * status, result, steps and votes; `--json` prints the record as the daemon keeps it.
 */
async function showTask(target: string, taskId: string, options: TroopOptions): Promise<void> {
  const found = await api<TroopView>("GET", path(target));
  const record = await api<TroopTaskRecord>("GET", path(found.id, `/tasks/${encodeURIComponent(taskId)}`));
  if (options.json) return printJson(record);
  const times = [`created ${record.created_at}`];
  if (record.started_at) times.push(`started ${record.started_at}`);
  if (record.finished_at) times.push(`finished ${record.finished_at}`);
  const head = [
    `Troop ${found.name}, task ${record.id} (${times.join(", ")})`,
    `Task: ${printable(cut(record.task, 200))}`,
  ];
  if (record.error) head.push(`Error: ${printable(record.error.message)} (${record.error.code})`);
  if (record.result === null && !ENDED.has(record.status)) {
    head.push(`Still ${record.status}; spar troop show ${found.name} ${record.id} again shows its progress`);
  }
  process.stdout.write(`${head.join("\n")}\n\n${outcome(record, found)}`);
}

async function task(target: string, text: string, options: TroopOptions): Promise<void> {
  // Always sent as async: Node's fetch drops a response whose headers take over 300 s (undici's
  // headersTimeout), which a waiting POST of a long task would hit; polling the task has no limit.
  const started = await api<TroopTaskRecord>("POST", path(target, "/tasks"), { task: text, async: true });
  if (options.async) {
    if (options.json) return printJson(started);
    process.stdout.write(
      `Task ${started.id} is ${started.status}; follow it with spar troop tasks ${target}, or spar troop show ${target} ${started.id}\n`,
    );
    return;
  }
  const named = options.json ? undefined : await api<TroopView>("GET", path(started.troop_id));
  const ended = await untilEnded(started, target);
  if (options.json) printJson(ended);
  else process.stdout.write(outcome(ended, named));
  if (ended.status === "completed") return;
  process.exitCode = 1;
  // With --json the record says it all, and stdout stays one JSON document.
  if (options.json) return;
  const error = ended.error ?? { code: "INTERNAL", message: `the task ended ${ended.status}` };
  process.stderr.write(`spar: ${printable(error.message)} (${error.code})\n`);
}

const ENDED = new Set(["completed", "failed", "cancelled"]);

/**
 * Polls a task until it ends, every 200 ms at first, then less often, to every 2 s. Ctrl-C stops
 * the waiting, not the task (as when a waiting client leaves the daemon), and says how to stop it.
 */
async function untilEnded(task: TroopTaskRecord, troop: string): Promise<TroopTaskRecord> {
  const onInterrupt = () => {
    process.stderr.write(
      `\nspar: stopped waiting; task ${task.id} goes on (spar troop tasks ${troop} shows it, ` +
        `spar troop cancel ${troop} ${task.id} stops it)\n`,
    );
    process.exit(130);
  };
  process.once("SIGINT", onInterrupt);
  try {
    const at = path(task.troop_id, `/tasks/${encodeURIComponent(task.id)}`);
    let record = task;
    for (let wait = 200; !ENDED.has(record.status); wait = Math.min(wait * 1.5, 2000)) {
      await new Promise((done) => setTimeout(done, wait));
      record = await api<TroopTaskRecord>("GET", at);
    }
    return record;
  } finally {
    process.off("SIGINT", onInterrupt);
  }
}

async function tasks(target: string, options: TroopOptions): Promise<void> {
  const query = options.limit ? `?limit=${encodeURIComponent(options.limit)}` : "";
  const listed = await api<{ tasks: TroopTaskRecord[] }>("GET", path(target, `/tasks${query}`));
  if (options.json) return printJson(listed);
  if (listed.tasks.length === 0) {
    process.stdout.write(`${target} has no tasks yet; spar troop task ${target} "<task>" runs one\n`);
    return;
  }
  process.stdout.write(`${taskTable(listed.tasks)}\n`);
}

/** `name (strategy), id …` and the troop's fighters, one line each. */
function describe(t: TroopView): string {
  return [
    `${t.name} (${t.strategy}), id ${t.id}`,
    `  leader   ${nameOf(t, t.leader)}`,
    `  members  ${t.members.map((m) => nameOf(t, m)).join(", ")}`,
    `  created  ${t.created_at}`,
  ].join("\n");
}

function taskTable(records: TroopTaskRecord[]): string {
  const rows = records.map((r) => [r.id, r.status, r.strategy, r.created_at, printable(cut(r.task, 50))]);
  return table([["ID", "STATUS", "STRATEGY", "CREATED", "TASK"], ...rows]);
}

/**
 * An ended task for the terminal: its result, then one line per step (who, what for, how it went,
 * tokens), then the consensus votes or the specialist's reason when the strategy recorded them.
 */
function outcome(r: TroopTaskRecord, troop: TroopView | undefined): string {
  const who = (id: string) => (troop ? nameOf(troop, id) : id);
  const out: string[] = [];
  if (r.result !== null) out.push(printable(r.result), "");
  const partial = r.partial ? ", partial (some steps failed or never ran)" : "";
  out.push(`Task ${r.id}: ${r.status} (${r.strategy})${partial}, ${plural(tokens(r.usage), "token")}`);
  const rows = r.steps.map((s) => [
    `  ${who(s.fighter_id)}`,
    s.role,
    s.error ? "error" : s.output === null ? "-" : "ok",
    plural(tokens(s.usage), "token"),
    s.error ? printable(cut(`${s.error.code}: ${s.error.message}`, 80)) : "",
  ]);
  if (rows.length > 0) out.push("Steps:", table(rows));
  if (r.votes && r.votes.length > 0) {
    const answers = r.steps.filter((s) => s.role === "answer");
    out.push("Votes:");
    for (const v of r.votes) {
      const answer = v.choice === null ? undefined : answers[v.choice];
      const chose =
        v.choice === null
          ? `no vote${v.error ? ` (${printable(cut(v.error, 80))})` : ""}`
          : `answer ${v.choice + 1}${answer ? ` (${who(answer.fighter_id)}'s)` : ""}`;
      const why = v.reason ? `: ${printable(cut(v.reason, 80))}` : "";
      out.push(`  ${who(v.fighter_id)}${v.tie_break ? " (tie break)" : ""} → ${chose}${why}`);
    }
  }
  if (r.reason) {
    const scores = r.reason.scores.map((s) => `${who(s.fighter_id)} ${s.score}`).join(", ");
    out.push(`Chose ${who(r.reason.chosen)}: ${printable(r.reason.text)}`, `  scores: ${scores}`);
  }
  return `${out.join("\n")}\n`;
}

/** A fighter's name, or its id marked as gone when the daemon no longer knows it. */
function nameOf(t: TroopView, id: string): string {
  return t.names[id] ?? `${id} (gone)`;
}

const tokens = (usage: { input_tokens: number; output_tokens: number }) =>
  usage.input_tokens + usage.output_tokens;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The first line of a text, cut to `max` characters. */
function cut(text: string, max: number): string {
  const first = text.trim().split("\n")[0] ?? "";
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}
