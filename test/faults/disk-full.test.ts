/**
 * A full disk, with the real daemon on a small tmpfs (`mount -t tmpfs`, so root only; skipped with
 * the reason printed otherwise). Clients send messages, each with its own Idempotency-Key, while a
 * ballast file eats the rest of the space. Checked: every answer is 200 or 507 `STORAGE_FULL` (no
 * other 5xx, never STORE_CORRUPT, no crash); health never says corrupt; once the ballast is deleted
 * the same process serves writes again by itself; every refused message retried with its key is
 * answered; after a restart every acknowledged message is in its bout exactly once, and `spar doctor`
 * finds the database intact. The long run fills and frees the disk several times.
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, startDaemon, type TestDaemon, writeConfig } from "../helpers/daemon.js";
import { type Answer, call, figure, pool, size, sleep, until } from "./lib.js";

const TMPFS_MB = 24;
const CLIENTS = 4;
const FILLS = size(1, 3);

interface Sent {
  fighter: string;
  text: string;
  key: string;
  /** The first attempt's answer: 200 (acknowledged), 507, or whatever else came (a failure). */
  first: number;
  /** The latest answer (200 once a refused message's retry was answered). */
  status: number;
  code?: string;
}

/** Mounts a tmpfs of `mb` MiB; answers why not when it cannot (not root, no mount). */
function mountTmpfs(dir: string, mb: number): string | undefined {
  const run = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${mb}m,mode=0700`, "tmpfs", dir], {
    encoding: "utf8",
  });
  if (run.error) return run.error.message;
  return run.status === 0 ? undefined : run.stderr.trim() || `mount exited with ${run.status}`;
}

/** Appends 256 KiB chunks to `path` until the disk is full; resolves with the bytes written. */
async function fillUp(path: string): Promise<number> {
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  const fd = openSync(path, "a");
  let written = 0;
  try {
    for (;;) {
      try {
        written += writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOSPC") return written;
        throw err;
      }
      await sleep(5); // the clients keep writing alongside
    }
  } finally {
    closeSync(fd);
  }
}

describe("a full disk under the data dir", () => {
  const mountPoint = mkdtempSync(join(tmpdir(), "spar-diskfull-"));
  let skipped: string | undefined;
  let fake: FakeOpenAI;
  let daemon: TestDaemon;
  let port: number;

  beforeAll(async () => {
    skipped = mountTmpfs(mountPoint, TMPFS_MB);
    if (skipped) return;
    fake = await startFakeOpenAI();
    port = await freePort();
    writeConfig(
      mountPoint,
      port,
      fake.url,
      "\n[creed]\nreflect = false\n\n[api]\nrate_limit_per_minute = 1000000\n",
    );
    daemon = await startDaemon(mountPoint, port);
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (!skipped) spawnSync("umount", [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });

  it("refuses writes with 507 STORAGE_FULL, loses nothing acknowledged and resumes by itself", async (ctx) => {
    if (skipped) {
      console.log(`disk full: skipped, a tmpfs could not be mounted (needs root): ${skipped}`);
      ctx.skip();
      return;
    }
    const fighters = ["df-a", "df-b", "df-c", "df-d"].slice(0, CLIENTS);
    for (const name of fighters) {
      const res = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name,
          description: name,
          system_prompt: `You are ${name}.`,
          // Only the disk may refuse here, never the fighter's own quota.
          quota: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 },
        },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const pid = daemon.process.pid;
    const sent: Sent[] = [];
    const bad: string[] = [];
    const stuck: string[] = [];
    let otherServerErrors = 0;
    let healthCorrupt = 0;
    const send = async (
      s: Pick<Sent, "fighter" | "text" | "key">,
    ): Promise<Answer<{ reply?: string; error?: { code?: string; message?: string } }>> =>
      call(
        `${daemon.url}/api/v1/fighters/${s.fighter}/message`,
        "POST",
        { message: s.text },
        { "idempotency-key": s.key },
      );
    const record = async (fighter: string, text: string) => {
      const s: Sent = { fighter, text, key: randomUUID(), first: 0, status: 0 };
      const answer = await send(s);
      s.first = answer.status;
      s.status = answer.status;
      s.code = answer.body?.error?.code;
      if (
        s.code === "STORAGE_FULL" &&
        !answer.body?.error?.message?.includes(`the disk holding ${mountPoint} is full`)
      )
        bad.push(`${text}: a STORAGE_FULL that names no data dir: ${answer.body?.error?.message}`);
      if (answer.status !== 200 && !(answer.status === 507 && s.code === "STORAGE_FULL"))
        bad.push(`${text}: ${answer.status} ${JSON.stringify(answer.body) ?? answer.error}`);
      if (answer.status >= 500 && answer.status !== 507) otherServerErrors++;
      sent.push(s);
      return s;
    };
    const checkHealth = async () => {
      const health = await call<{ store?: string }>(`${daemon.url}/api/v1/health`, "GET");
      if (health.status !== 200 || health.body?.store === "corrupt") healthCorrupt++;
    };

    let resumed = 0;
    for (let fill = 0; fill < FILLS; fill++) {
      // Some traffic on a disk with room first, so the full disk meets a database in use.
      await pool(fighters, CLIENTS, async (fighter) => {
        for (let i = 0; i < 5; i++) await record(fighter, `room ${fill} ${fighter} #${i}`);
      });
      const ballast = join(mountPoint, `ballast-${fill}`);
      // Clients write while the ballast grows, and go on until the full disk has refused some.
      let filled = false;
      const filling = fillUp(ballast).then(() => {
        filled = true;
      });
      let refusedAfterFull = 0;
      await pool(fighters, CLIENTS, async (fighter) => {
        for (let i = 0; ; i++) {
          const s = await record(fighter, `fill ${fill} ${fighter} #${i} ${"x".repeat(200)}`);
          if (filled && s.status === 507) refusedAfterFull++;
          if (filled && (refusedAfterFull >= 8 || i > 400)) return;
          if (bad.length > 0) return;
        }
      });
      await filling;
      await checkHealth();
      expect(bad).toEqual([]);
      const refused = sent.filter((s) => s.status === 507);
      expect(refusedAfterFull).toBeGreaterThan(0);

      // Space returns: the same process takes writes again, and each refused message, retried with
      // its own key, is answered now.
      unlinkSync(ballast);
      await until(
        "a write after the space came back",
        async () =>
          (await send({ fighter: "df-a", text: `probe ${fill} ${randomUUID()}`, key: randomUUID() }))
            .status === 200,
      );
      for (const s of refused) {
        const retry = await send(s);
        if (retry.status >= 500 && retry.status !== 507) otherServerErrors++;
        if (retry.status === 200) s.status = 200;
        else bad.push(`retry of ${s.text}: ${retry.status} ${JSON.stringify(retry.body)}`);
        s.code = undefined;
      }
      expect(bad).toEqual([]);
      // Nothing left half-done by the refusals: no fighter fighting, no turn running.
      for (const fighter of fighters) {
        const shown = await daemon.request<{ status?: string }>("GET", `/api/v1/fighters/${fighter}`);
        if (shown.body.status === "fighting") stuck.push(`fighter ${fighter}`);
        const bouts = await daemon.request<{ bouts: { id: string }[] }>(
          "GET",
          `/api/v1/fighters/${fighter}/bouts`,
        );
        for (const bout of bouts.body.bouts) {
          const turns = await daemon.request<{ turns: { id: string; status: string }[] }>(
            "GET",
            `/api/v1/bouts/${bout.id}/turns`,
          );
          for (const t of turns.body.turns) if (t.status === "running") stuck.push(`turn ${t.id}`);
        }
      }
      expect(stuck).toEqual([]);
      expect(daemon.process.pid).toBe(pid);
      expect(daemon.process.exitCode).toBeNull();
      resumed++;
    }
    await checkHealth();
    expect(healthCorrupt).toBe(0);

    // A restart on the same disk: every acknowledged message is in its bout exactly once.
    expect(await daemon.stop()).toBe(0);
    const doctor = await daemon.cli(["doctor"]);
    const dbLine = doctor.stdout.split("\n").find((l) => l.includes("database:")) ?? doctor.stdout;
    expect(dbLine).toContain("passes the quick integrity check");
    daemon = await startDaemon(mountPoint, port);
    const counts = new Map<string, number>();
    for (const fighter of fighters) {
      const bouts = await daemon.request<{ bouts: { id: string }[] }>(
        "GET",
        `/api/v1/fighters/${fighter}/bouts`,
      );
      for (const bout of bouts.body.bouts) {
        const listed = await daemon.request<{ messages: { role: string; content: string }[] }>(
          "GET",
          `/api/v1/bouts/${bout.id}/messages`,
        );
        for (const m of listed.body.messages.filter((m) => m.role === "user"))
          counts.set(m.content, (counts.get(m.content) ?? 0) + 1);
      }
    }
    const acknowledged = sent.filter((s) => s.status === 200);
    const lost = acknowledged
      .filter((s) => counts.get(s.text) !== 1)
      .map((s) => `${s.text} ×${counts.get(s.text) ?? 0}`);
    const duplicated = [...counts].filter(([, n]) => n > 1).map(([t]) => t);
    const refusedTotal = sent.filter((s) => s.first === 507).length;
    figure(
      `disk full: ${sent.filter((s) => s.first === 200).length} acknowledged before full, ${refusedTotal} refused STORAGE_FULL (507), ` +
        `5xx other than 507: ${otherServerErrors}, lost ${lost.length}, resumed without restart: ${resumed === FILLS ? "yes" : "no"}, ` +
        `integrity ok${FILLS > 1 ? ` (${FILLS} fills)` : ""}`,
    );
    expect({ lost, duplicated }).toEqual({ lost: [], duplicated: [] });
  }, 120_000);
});
