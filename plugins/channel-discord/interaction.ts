/**
 * Discord's interactions as this channel understands them: the `/ask prompt:<text>` slash command it
 * registers, read out of the JSON Discord POSTs (after its signature was checked), and the answers
 * Discord expects in the HTTP response; and a press of the Approve / Deny buttons the bot posts for
 * a waiting call (a MESSAGE_COMPONENT interaction, approvals.ts). Everything else Discord could send
 * (other components, modals, autocomplete) is refused: this bot registers none of them.
 */
import { SparError } from "../../sdk/index.js";

/** The slash command, as `PUT /applications/:id/commands` takes it. */
export const ASK_COMMAND = {
  name: "ask",
  type: 1,
  description: "Ask the bot",
  options: [
    { type: 3, name: "prompt", description: "What you want to ask", required: true, max_length: 6000 },
  ],
} as const;

/** An interaction the endpoint acts on. */
export type Interaction =
  | { kind: "ping" }
  | {
      kind: "ask";
      /** The interaction's id (a replay has the same). */
      id: string;
      /** The application's id and the interaction's token: the follow-up webhook's address. */
      applicationId: string;
      token: string;
      /** The channel (or DM) it was used in. */
      chat: string;
      /** The user who used it. */
      sender: string;
      prompt: string;
    }
  | {
      kind: "press";
      id: string;
      /** The channel the pressed message is in. */
      chat: string;
      sender: string;
      /** The pressed message: its id and content. */
      message_id: string;
      content: string;
      /** The button's `custom_id`. */
      custom_id: string;
    };

/** The answers Discord reads from the HTTP response (interaction callback types). */
export const PONG = { type: 1 } as const;
/** "The bot is thinking…": the reply follows as follow-up messages, within 15 minutes. */
export const DEFERRED = { type: 5 } as const;
/** A reply only the user who asked sees. */
export function ephemeral(content: string) {
  return { type: 4, data: { content, flags: 64, allowed_mentions: { parse: [] } } };
}

const SNOWFLAKE = /^\d{17,20}$/;

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function snowflake(value: unknown, what: string): string {
  if (typeof value === "string" && SNOWFLAKE.test(value)) return value;
  throw new SparError("VALIDATION_FAILED", `the interaction's ${what} is not a Discord id`);
}

/** Reads a PING or an `/ask` out of an interaction's body; VALIDATION_FAILED for anything else. */
export function readInteraction(body: unknown): Interaction {
  const interaction = record(body);
  if (!interaction) throw new SparError("VALIDATION_FAILED", "an interaction is a JSON object");
  if (interaction.type === 1) return { kind: "ping" };
  if (interaction.type === 3) return readPress(interaction);
  if (interaction.type !== 2) {
    throw new SparError(
      "VALIDATION_FAILED",
      `interactions of type ${JSON.stringify(interaction.type)} are not handled: this bot has only the /ask command`,
    );
  }
  const data = record(interaction.data);
  if (data?.name !== ASK_COMMAND.name) {
    throw new SparError(
      "VALIDATION_FAILED",
      `unknown command ${JSON.stringify(data?.name)}: this bot has only /ask`,
    );
  }
  const options = Array.isArray(data.options) ? data.options.map(record) : [];
  const prompt = options.find((o) => o?.name === "prompt" && o.type === 3)?.value;
  if (typeof prompt !== "string" || prompt.trim() === "") {
    throw new SparError("VALIDATION_FAILED", "/ask needs its prompt option, a non-empty string");
  }
  const token = interaction.token;
  if (typeof token !== "string" || !/^[A-Za-z0-9._-]{1,500}$/.test(token)) {
    throw new SparError("VALIDATION_FAILED", "the interaction has no usable token");
  }
  // In a guild the user is the member's; in a DM it is given directly.
  const user = record(record(interaction.member)?.user) ?? record(interaction.user);
  return {
    kind: "ask",
    id: snowflake(interaction.id, "id"),
    applicationId: snowflake(interaction.application_id, "application_id"),
    token,
    chat: snowflake(record(interaction.channel)?.id ?? interaction.channel_id, "channel id"),
    sender: snowflake(user?.id, "user id"),
    prompt,
  };
}

/** A MESSAGE_COMPONENT interaction: a button (component type 2) pressed on one of the bot's messages. */
function readPress(interaction: Record<string, unknown>): Interaction {
  const data = record(interaction.data);
  const customId = data?.custom_id;
  if (data?.component_type !== 2 || typeof customId !== "string" || !customId.startsWith("spar:")) {
    throw new SparError(
      "VALIDATION_FAILED",
      "interactions of type 3 other than Spar's Approve / Deny buttons are not handled: this bot has only the /ask command and those buttons",
    );
  }
  const message = record(interaction.message);
  const user = record(record(interaction.member)?.user) ?? record(interaction.user);
  return {
    kind: "press",
    id: snowflake(interaction.id, "id"),
    chat: snowflake(record(interaction.channel)?.id ?? interaction.channel_id, "channel id"),
    sender: snowflake(user?.id, "user id"),
    message_id: snowflake(message?.id, "message id"),
    content: typeof message?.content === "string" ? message.content : "",
    custom_id: customId.slice(0, 100),
  };
}
