import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

interface StatusBody {
  status: string;
  version: string;
  uptime_s: number;
  fighters: { id: string; name: string; status: string }[];
}

export async function status(options: GlobalOptions): Promise<void> {
  const body = await api<StatusBody>("GET", "/api/v1/status");
  if (options.json) return printJson(body);
  process.stdout.write(
    `Spar ${body.version} is running (up ${body.uptime_s} s), ${body.fighters.length} fighter(s)\n`,
  );
  if (body.fighters.length > 0) {
    process.stdout.write(
      `${table([["NAME", "STATUS", "ID"], ...body.fighters.map((f) => [f.name, f.status, f.id])])}\n`,
    );
  }
}
