/**
 * scheduler-bullmq's firing: each unleashed gorilla is a BullMQ job scheduler keyed by its name on
 * the queue every node shares, so however many nodes upsert it there is one schedule, and one job
 * per fire time (its id is `repeat:<name>:<fire time>`); a Worker on every node takes fires, and
 * BullMQ hands each job to exactly one of them. The fire times are the gorilla schedule's own
 * (`repeatStrategy` asks lib/gorillas/schedule.ts, so croner's and BullMQ's fires agree, `every 3d`
 * included). A job stays active while its cycle runs.
 *
 * Across nodes: a cycle holds its gorilla's slot (slots.ts) while it runs; a cage from any node
 * removes the job scheduler, records the desired state, and reaches the running cycle by a pub/sub
 * message on `<prefix>:gorilla-desired` and by the slot's abort key (read at every heartbeat).
 *
 * Late fires: BullMQ keeps a fire that came due while no worker ran, and hands it out once one does.
 * A fire taken more than LATE_MS after it was due is one missed while the cluster was down: with
 * `catch_up = "once"` it runs as a `catch_up` cycle, with `"skip"` it is let go.
 */
import { randomUUID } from "node:crypto";
import { type Job, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "../../sdk/index.js";
import type { Firing, FiringHost, GorillaDesired, LoadedGorilla } from "../../sdk/kits/gorillas.js";
import { parseSchedule, type Schedule } from "../../sdk/kits/gorillas.js";
import { connectRedis } from "../../sdk/kits/redis.js";
import { createSlots, type Slots } from "./slots.js";

/** The queue every node shares (its keys are `<prefix>:gorillas:*`). */
export const QUEUE = "gorillas";
/** A fire taken later than this after it was due was missed while no node was up. */
export const LATE_MS = 10_000;
/** How often each node looks for runs whose node stopped. */
const SWEEP_MS = 5_000;
/** How long a cage waits for another node's cycle to be recorded, and a stop for this node's. */
const WIND_DOWN_MS = 15_000;
/** Cycles one node runs at once: fires of different gorillas coming due together. */
const CONCURRENCY = 64;
/** Ended fire jobs kept in Redis, for inspection. */
const KEEP_JOBS = 100;

/** A fire job's data. */
interface FireData {
  gorilla: string;
}

/** A desired-state message between nodes. */
interface DesiredMessage {
  gorilla: string;
  desired: GorillaDesired;
  node: string;
}

const schedules = new Map<string, Schedule>();

/** The next fire strictly after `millis` on the gorilla schedule `pattern` in `tz`: BullMQ's repeatStrategy. */
export function nextFire(millis: number, opts: { pattern?: string; tz?: string }): number | undefined {
  if (!opts.pattern) return undefined;
  const key = `${opts.tz ?? ""}\n${opts.pattern}`;
  let schedule = schedules.get(key);
  if (!schedule) {
    schedule = parseSchedule(opts.pattern, opts.tz);
    schedules.set(key, schedule);
  }
  return schedule.next(new Date(millis))?.getTime();
}

export interface BullmqFiringOptions {
  url: string;
  prefix: string;
  log: Logger;
}

/** Fires from BullMQ job schedulers on the Redis at `url`. */
export function createBullmqFiring({ url, prefix, log }: BullmqFiringOptions): Firing {
  const node = randomUUID();
  const channel = `${prefix}:gorilla-desired`;
  const connection = { url, maxRetriesPerRequest: null };
  const settings = { repeatStrategy: nextFire };
  let queue: Queue<FireData> | undefined;
  let worker: Worker<FireData> | undefined;
  let redis: Redis | undefined;
  let subscriber: Redis | undefined;
  let slots: Slots | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  let host: FiringHost | undefined;

  async function take(job: Job<FireData>): Promise<void> {
    const name = job.data.gorilla;
    const at = new Date(job.opts.prevMillis ?? job.timestamp + (job.opts.delay ?? 0));
    // BullMQ hands a stalled scheduler job out again (its node died, or stopped renewing the lock):
    // that fire was taken once already, and its run, if it began, is failed by the sweep.
    if (job.stalledCounter > 0) {
      log.warn("a gorilla fire whose node stopped while holding it is not run again", {
        gorilla: name,
        due_at: at.toISOString(),
      });
      return;
    }
    if (Date.now() - at.getTime() <= LATE_MS) return host?.fire(name, at);
    const gorilla = host?.gorilla(name);
    if (gorilla?.settings.catch_up !== "once") {
      log.info("a gorilla fire missed while no node was up is let go (catch_up = skip)", {
        gorilla: name,
        due_at: at.toISOString(),
      });
      return;
    }
    log.info("gorilla missed a fire while no node was up: one catch-up cycle", { gorilla: name });
    return host?.fire(name, new Date(), "catch_up");
  }

  function sweep(): void {
    slots
      ?.sweep()
      .catch((err: unknown) =>
        log.warn("gorilla runs of stopped nodes could not be swept", { error: String(err) }),
      );
  }

  async function upsert(queue: Queue<FireData>, gorilla: LoadedGorilla): Promise<void> {
    await queue.upsertJobScheduler(
      gorilla.name,
      { pattern: gorilla.schedule.text, tz: gorilla.schedule.timezone },
      {
        name: "fire",
        data: { gorilla: gorilla.name },
        opts: { removeOnComplete: { count: KEEP_JOBS }, removeOnFail: { count: KEEP_JOBS } },
      },
    );
  }

  function need<T>(value: T | undefined): T {
    if (value === undefined) throw new Error("scheduler-bullmq was used before it started");
    return value;
  }

  return {
    catchUpAtStart: false,

    async start(given) {
      host = given;
      const options = { plugin: "scheduler-bullmq", maxRetriesPerRequest: null };
      redis = await connectRedis(url, { ...options, purpose: "gorillas" });
      subscriber = await connectRedis(url, { ...options, purpose: "gorillas-sub" });
      slots = createSlots({
        redis,
        prefix,
        runs: given.records.runs,
        log,
        onAbort: (name) => given.changed(name, "caged"),
      });
      subscriber.on("message", (_channel: string, text: string) => {
        try {
          const message = JSON.parse(text) as DesiredMessage;
          if (message.node !== node) given.changed(message.gorilla, message.desired);
        } catch {
          log.warn("an unreadable gorilla message on the Redis channel was ignored", { channel });
        }
      });
      await subscriber.subscribe(channel);
      queue = new Queue<FireData>(QUEUE, { connection, prefix, settings });
      queue.on("error", (err) => log.warn("the gorilla queue reported an error", { error: String(err) }));
      worker = new Worker<FireData>(QUEUE, take, {
        connection,
        prefix,
        settings,
        concurrency: CONCURRENCY,
        // A stalled scheduler job comes back whatever this says (BullMQ 6); `take` lets it go.
        maxStalledCount: 0,
      });
      worker.on("error", (err) => log.warn("the gorilla worker reported an error", { error: String(err) }));
      sweep();
      sweeper = setInterval(sweep, SWEEP_MS);
      sweeper.unref();
    },

    async arm(gorilla, { restart }) {
      const q = need(queue);
      if (restart) {
        await need(slots).sweepStore(gorilla.name);
        // Kept as it is when unchanged: a fire due while the cluster was down is still in it.
        const existing = await q.getJobScheduler(gorilla.name);
        if (existing?.pattern === gorilla.schedule.text && existing.tz === gorilla.schedule.timezone) return;
      }
      await upsert(q, gorilla);
    },

    async disarm(gorilla) {
      await need(queue).removeJobScheduler(gorilla.name);
    },

    // Asked only while unleashed (the store's state, which every node follows).
    next(gorilla) {
      return gorilla.schedule.next(new Date()) ?? undefined;
    },

    claim(name) {
      return need(slots).claim(name);
    },

    async announce(name, desired) {
      const message: DesiredMessage = { gorilla: name, desired, node };
      await need(redis).publish(channel, JSON.stringify(message));
      if (desired !== "caged") return { ended: Promise.resolve() };
      return need(slots).abort(name, WIND_DOWN_MS);
    },

    async stop() {
      clearInterval(sweeper);
      // The worker waits for the fires it runs: the runtime aborts their cycles right after this.
      await worker?.close();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([slots?.drain(), new Promise((r) => (timer = setTimeout(r, WIND_DOWN_MS)))]);
      clearTimeout(timer);
      await queue?.close();
      await subscriber?.quit().catch(() => undefined);
      await redis?.quit().catch(() => undefined);
    },
  };
}
