/**
 * Telling Discord where the interactions endpoint is and which command the bot has, at every start
 * (a quick tunnel's URL changes each run): `PATCH /applications/@me` with the endpoint's URL, which
 * Discord accepts only after its signed PING got `{type: 1}` there and a forged one 401, then
 * `PUT /applications/:id/commands` with `/ask`, so the command exists only once something answers it.
 */
import type { REST } from "discord.js";
import { Routes } from "discord.js";
import { ASK_COMMAND } from "./interaction.js";

/** Registers `url` as the application's interactions endpoint and `/ask` as its only command. */
export async function registerInteractions(
  rest: REST,
  options: { url: string; applicationId?: string },
): Promise<void> {
  const application = (await rest.patch(Routes.currentApplication(), {
    body: { interactions_endpoint_url: options.url },
  })) as { id: string };
  await rest.put(Routes.applicationCommands(options.applicationId ?? application.id), {
    body: [ASK_COMMAND],
  });
}
