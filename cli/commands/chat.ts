import type { FighterMessageResult } from "../../kernel/services.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";

export async function chat(
  text: string,
  options: GlobalOptions & { fighter: string; bout?: string },
): Promise<void> {
  const result = await api<FighterMessageResult>(
    "POST",
    `/api/v1/fighters/${encodeURIComponent(options.fighter)}/message`,
    {
      message: String(text),
      ...(options.bout ? { bout_id: options.bout } : {}),
    },
  );
  if (options.json) return printJson(result);
  process.stdout.write(`${result.response}\n`);
}
