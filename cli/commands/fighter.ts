import { SparError } from "../../sdk/errors.js";
import type { FighterUsage } from "../../sdk/services.js";
import type { FighterRecord } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/** `spar fighter spawn|list|usage|kill`; the parser has checked that spawn has a kind, usage and kill a target. */
export async function fighter(
  action: string,
  target: string | undefined,
  options: GlobalOptions & { name?: string },
): Promise<void> {
  switch (action) {
    case "spawn": {
      // The daemon names the kinds when it does not know one.
      const record = await api<FighterRecord>("POST", "/api/v1/fighters", {
        template: target,
        ...(options.name !== undefined ? { name: options.name } : {}),
      });
      if (options.json) return printJson(record);
      process.stdout.write(`Spawned ${record.name} (${record.id})\n`);
      return;
    }
    case "list": {
      const { fighters } = await api<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters");
      if (options.json) return printJson({ fighters });
      const rows = fighters.map((f) => [f.name, f.status, `${f.model.provider}/${f.model.model}`, f.id]);
      process.stdout.write(`${table([["NAME", "STATUS", "MODEL", "ID"], ...rows])}\n`);
      return;
    }
    case "usage":
      return usage(target ?? "", options);
    case "kill":
      return kill(target ?? "", options);
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for fighter`);
  }
}

/** A fighter's usage per model, with its cost ("unpriced" for a model without a price) and the total. */
async function usage(target: string, options: GlobalOptions): Promise<void> {
  const { formatCost } = await import("../../lib/pricing.js");
  const spent = await api<FighterUsage>("GET", `/api/v1/fighters/${encodeURIComponent(target)}/usage`);
  if (options.json) return printJson(spent);
  const cost = (micros: number | null, unpriced: number, requests: number) =>
    micros === null
      ? "unpriced"
      : `${formatCost(micros)}${unpriced > 0 ? ` (+${unpriced} of ${requests} unpriced)` : ""}`;
  const rows = spent.usage.map((u) => [
    `${u.provider}/${u.model}`,
    String(u.requests),
    String(u.input_tokens),
    String(u.cached_tokens),
    String(u.cache_write_tokens),
    String(u.output_tokens),
    cost(u.cost_micros, u.unpriced_requests, u.requests),
  ]);
  const { totals } = spent;
  rows.push([
    "TOTAL",
    String(totals.requests),
    String(totals.input_tokens),
    String(spent.usage.reduce((n, u) => n + u.cached_tokens, 0)),
    String(spent.usage.reduce((n, u) => n + u.cache_write_tokens, 0)),
    String(totals.output_tokens),
    cost(spent.cost.cost_micros, spent.cost.unpriced_requests, totals.requests),
  ]);
  const head = ["MODEL", "CALLS", "INPUT", "CACHED", "CACHE WRITE", "OUTPUT", "COST"];
  process.stdout.write(`${table([head, ...rows])}\n`);
}

/**
 * Kills a fighter, and warns when troops count it as their leader or a member: they take no task
 * until `spar troop edit` replaces it (the daemon refuses them with TROOP_INCOMPLETE before any model
 * call). A warning, not a refusal: killing is deliberate, and nothing is lost that an edit cannot
 * mend. A respawn under the same name is a new fighter (another id, maybe other grants), so it does
 * not join the troops by itself.
 */
async function kill(target: string, options: GlobalOptions): Promise<void> {
  const victim = await api<FighterRecord>("GET", `/api/v1/fighters/${encodeURIComponent(target)}`);
  await api("DELETE", `/api/v1/fighters/${encodeURIComponent(victim.id)}`);
  // Without the troops plugin there is no troop to break.
  const { troops } = await api<{ troops: { name: string; leader: string; members: string[] }[] }>(
    "GET",
    "/api/v1/troops",
  ).catch(() => ({ troops: [] }));
  const broken = troops
    .filter((t) => t.leader === victim.id || t.members.includes(victim.id))
    .map((t) => t.name);
  if (options.json) return printJson({ killed: target, id: victim.id, troops: broken });
  process.stdout.write(`Killed ${target}\n`);
  if (broken.length === 0) return;
  const which = broken.length === 1 ? `troop ${broken[0]}` : `troops ${broken.join(", ")}`;
  const edit = broken.length === 1 ? (broken[0] as string) : "<troop>";
  process.stderr.write(
    `spar: warning: ${victim.name} was in ${which}, which take${broken.length === 1 ? "s" : ""} no task until ` +
      `spar troop edit ${edit} --members <a,b,c> (or --leader <fighter>) replaces it\n`,
  );
}
