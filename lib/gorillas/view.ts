/**
 * A gorilla as this node holds it, and as the routes show it: its state is what the operator asked
 * for (the store's), RAMPAGING while a cycle of this node runs.
 */
import type { Cycle } from "./cycle.js";
import type { Firing } from "./firing.js";
import { type GorillaStatus, statusOf } from "./lifecycle.js";
import type { LoadedGorilla } from "./manifest.js";
import type { GorillaDesired, GorillaRunRecord } from "./records.js";

/** A loaded gorilla and what this node knows of it. */
export interface GorillaEntry {
  gorilla: LoadedGorilla;
  desired: GorillaDesired;
  cycle?: Cycle;
  last_run?: GorillaRunRecord;
  /** The gorilla's fighter's name, once it is known to exist. */
  fighter?: Promise<string>;
  recorded: number;
  /** Caged by a budget (budget-cage.ts): why, and when it is unleashed again. */
  budgetCage?: { reason: string; until: string };
}

/** A gorilla as the routes show it. */
export interface GorillaView {
  id: string;
  name: string;
  display_name: string;
  description: string;
  schedule: string;
  timezone: string;
  state: GorillaStatus;
  /** The same as `state`: DESIGN §6's name for it. */
  status: GorillaStatus;
  /** The next fire while unleashed; null while caged. */
  next_run_at: string | null;
  last_run: GorillaRunRecord | null;
  moves: string[];
  source: "bundled" | "user";
  /** Why it is caged, when a budget caged it (it is unleashed by itself at `caged_until`). */
  caged_reason?: string;
  caged_until?: string;
}

/** A gorilla as the routes show it, with its next fire from the firing. */
export function viewOf(entry: GorillaEntry, firing: Pick<Firing, "next">): GorillaView {
  const { gorilla } = entry;
  const state = statusOf(entry.desired, entry.cycle !== undefined);
  const next = entry.desired === "unleashed" ? firing.next(gorilla) : undefined;
  return {
    id: gorilla.name,
    name: gorilla.name,
    display_name: gorilla.display_name,
    description: gorilla.description,
    schedule: gorilla.schedule.text,
    timezone: gorilla.schedule.timezone,
    state,
    status: state,
    next_run_at: next?.toISOString() ?? null,
    last_run: entry.last_run ?? null,
    moves: gorilla.moves,
    source: gorilla.source,
    ...(entry.budgetCage && entry.desired === "caged"
      ? { caged_reason: entry.budgetCage.reason, caged_until: entry.budgetCage.until }
      : {}),
  };
}
