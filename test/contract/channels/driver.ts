/**
 * What the channel contract suite (test/contract/channels.test.ts) needs from each platform: a fake
 * of the platform on 127.0.0.1 that the real library talks to (base URL only), and a way to send a
 * message as the platform would deliver it. One driver per platform, in this folder.
 */

/** A message the bot posted to the fake platform. */
export interface PostedMessage {
  chat: string;
  text: string;
}

export interface ChannelDriver {
  readonly platform: "telegram" | "discord" | "slack";
  /** The platform's longest message, in characters (a long reply must arrive split to it). */
  readonly limit: number;
  /**
   * Starts the fake platform. Returns the `[channels.<platform>]` table for config.toml (allowing
   * exactly `allowed`, answered by `fighter`) and the secrets as environment variables.
   */
  start(options: {
    allowed: string;
    fighter: string;
  }): Promise<{ toml: string; env: Record<string, string> }>;
  /**
   * After the daemon started: resolves once the channel is connected (webhook registered, gateway
   * ready). `tunnelUrl` is the tunnel's public URL (the suite's manual tunnel): where a platform
   * without a registration call (Slack, whose Request URL is pasted in the app's settings) delivers.
   */
  ready(context: { tunnelUrl: string }): Promise<void>;
  /**
   * Sends `text` from `sender` in `chat` as the platform delivers it: signed correctly, or forged
   * (a bad signature) when `forge`. `id` is the platform's delivery id (a replay reuses it). Returns
   * the webhook's HTTP status, or undefined for a gateway delivery (no HTTP answer exists).
   */
  deliver(message: {
    sender: string;
    chat: string;
    text: string;
    id?: string;
    forge?: boolean;
  }): Promise<number | undefined>;
  /** Whether `forge` goes through a webhook (true) or cannot be forged on this path (a gateway). */
  readonly signed: boolean;
  /**
   * The platform's id for a chat the suite names, where the two differ (Discord's are snowflakes);
   * `deliver` and `posted` map them already, this is for ids the suite hands a fighter (channel_notify).
   */
  chat?(name: string): string;
  /** Messages the bot posted, in order. */
  posted(): PostedMessage[];
  /** How many typing indicators the bot sent. */
  typing(): number;
  /** The webhook URL the daemon registered with the platform, when it uses one. */
  registeredUrl(): string | undefined;
  close(): Promise<void>;
}
