/**
 * How fires reach the gorilla runtime: the one thing the scheduler plugins differ in. The runtime
 * (runtime.ts) keeps the lifecycle, the cycles and the store's records; a `Firing` says when a
 * gorilla fires and, in a cluster, which node answers a fire. scheduler-croner fires from timers in
 * one process; scheduler-bullmq from BullMQ job schedulers shared by every node on one Redis, where
 * `claim` and `announce` carry what one process knew by itself (a cycle running, a cage).
 */
import type { LoadedGorilla } from "./manifest.js";
import type { GorillaDesired, GorillaRecords } from "./records.js";

/** What a firing may ask of the runtime. */
export interface FiringHost {
  /**
   * A fire due at `at`: it starts a cycle, or it is recorded `skipped` while one runs. Settles once
   * that cycle has ended and been recorded (or the skip has been), never rejects.
   */
  fire(name: string, at: Date, trigger?: "schedule" | "catch_up"): Promise<void>;
  /** A loaded gorilla, by name. */
  gorilla(name: string): LoadedGorilla | undefined;
  /** Another node recorded a new desired state; `caged` also aborts the gorilla's cycle running here. */
  changed(name: string, desired: GorillaDesired): void;
  /** The gorillas' states and runs (the runs a stopped node left running are the firing's to end). */
  readonly records: GorillaRecords;
}

/** A gorilla's one cycle slot across nodes, held while its cycle runs. */
export interface CycleSlot {
  /** The run the cycle was recorded as (so a node that dies holding the slot can have it failed). */
  bind(runId: string): void;
  /** Gives the slot back once the cycle's run is recorded ended. */
  release(): Promise<void>;
}

/** Fires for the runtime; the optional members are for firings shared by several nodes. */
export interface Firing {
  /**
   * True when the runtime itself makes up, at start, for a fire missed while the daemon was down
   * (the gorilla's `catch_up`); false when the firing delivers a late fire itself.
   */
  readonly catchUpAtStart: boolean;
  /**
   * Called once, before any `arm`: fires go to `host` from now on. It also records `failed` the runs
   * a stopped daemon left `running` (only those, in a cluster: other nodes' cycles are alive).
   */
  start(host: FiringHost): Promise<void>;
  /** The gorilla fires on its schedule from now on; `restart` when brought back at start. */
  arm(gorilla: LoadedGorilla, options: { restart: boolean }): void | Promise<void>;
  /** No more fires for the gorilla (caged). */
  disarm(gorilla: LoadedGorilla): void | Promise<void>;
  /** The next fire while armed, else undefined. */
  next(gorilla: LoadedGorilla): Date | undefined;
  /**
   * Takes the gorilla's cycle slot across nodes before a cycle starts: the slot, or `busy` with the
   * run holding it when another node's cycle runs. Absent in one process (the runtime's own check).
   */
  claim?(name: string): Promise<CycleSlot | { busy: string | undefined }>;
  /**
   * Tells the other nodes the desired state changed. When caged, the cycle another node runs is
   * aborted: its run id, and a promise that settles once it has ended (the caller bounds the wait).
   */
  announce?(name: string, desired: GorillaDesired): Promise<{ run_id?: string; ended: Promise<void> }>;
  /**
   * No more fires. May settle only once the cycles running here have ended: the runtime aborts them
   * right after calling it.
   */
  stop(): Promise<void>;
}
