/**
 * The troop kit's records: a troop and its tasks as troops-local keeps them in its own collections
 * (plugin.json `data`) and as the API answers them, and the parts a strategy reads and writes (steps,
 * votes, the specialist's reason). Strategy plugins, the CLI and the tests take them from here.
 */
import type { BudgetLimits, Usage } from "../../sdk/types.js";

/** A troop: fighters (by id) working under one strategy; the leader decomposes, synthesizes, breaks ties. */
export interface TroopRecord {
  id: string;
  name: string;
  leader: string;
  /** The ordered workers. */
  members: string[];
  /** The strategy's wire name (`pipeline`, `leader_worker`, …). */
  strategy: string;
  /** The budget its tasks' model calls count against (README "Budgets"); absent: none. */
  budget?: BudgetLimits;
  created_at: string;
}

/** Where a task is: waiting, running, or how it ended. */
export type TroopTaskStatus = "pending" | "running" | "completed" | "failed" | "cancelled";

/** A failure as recorded: the error's stable code and its message. */
export interface RecordedError {
  code: string;
  message: string;
}

/** One member's turn in a task: a fresh bout of that fighter with `input`. */
export interface TroopStep {
  fighter_id: string;
  /** What the step was for: `answer`, `vote`, `decompose`, `work`, `synthesize`, `tie_break`. */
  role: string;
  input: string;
  /** Null until it ends, and when it failed. */
  output: string | null;
  error: RecordedError | null;
  bout_id: string | null;
  started_at: string;
  finished_at: string | null;
  usage: Usage;
}

/** A consensus vote: the answer (0-based, into the `answer` steps) a member chose, or why it has none. */
export interface TroopVote {
  fighter_id: string;
  choice: number | null;
  reason?: string;
  error?: string;
  /** The leader's vote among tied answers. */
  tie_break?: boolean;
}

/** Why the specialist strategy chose its member: every member's score and the words that matched. */
export interface SpecialistReason {
  chosen: string;
  text: string;
  scores: { fighter_id: string; score: number; matched: string[] }[];
}

/** One task given to a troop: its steps, votes or reason, result or error, and usage, as recorded. */
export interface TroopTaskRecord {
  id: string;
  troop_id: string;
  task: string;
  strategy: string;
  status: TroopTaskStatus;
  result: string | null;
  steps: TroopStep[];
  votes?: TroopVote[];
  reason?: SpecialistReason;
  error: RecordedError | null;
  /** True when some steps failed or never ran while others produced output (kept in `steps`). */
  partial: boolean;
  /** The steps' usage summed. */
  usage: Usage;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}
