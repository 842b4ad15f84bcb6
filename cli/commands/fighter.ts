import { SparError } from "../../sdk/errors.js";
import type { FighterRecord } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/** `spar fighter spawn|list|kill`; the parser has checked that spawn has a kind and kill a target. */
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
    case "kill": {
      await api("DELETE", `/api/v1/fighters/${encodeURIComponent(target ?? "")}`);
      if (options.json) return printJson({ killed: target });
      process.stdout.write(`Killed ${target}\n`);
      return;
    }
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for fighter`);
  }
}
