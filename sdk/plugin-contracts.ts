import type {
  RecordedError,
  SpecialistReason,
  TroopRecord,
  TroopStep,
  TroopVote,
} from "../lib/troops/records.js";

/*
 * What strategy, channel and tunnel plugins hand the Ring through their hooks
 * (`strategy.resolve`, `channel.resolve`, `tunnel.open`), and what the rest of Spar may rely on.
 */

/** A troop member as a strategy sees it: who it is and what it can do (the specialist scores these). */
export interface TroopMember {
  id: string;
  name: string;
  description: string;
  /** Its capability grants' types. */
  capabilities: string[];
  skills: string[];
}

/** One troop task as the runtime hands it to a strategy. */
export interface StrategyTask {
  troop: TroopRecord;
  task: string;
  leader: TroopMember;
  members: TroopMember[];
  /** Aborted when the task is cancelled; a strategy stops starting steps once it is. */
  signal: AbortSignal;
  /** The most steps a strategy runs at once (`[troops] max_parallel`). */
  max_parallel: number;
  /**
   * Runs one step, recorded on the task: a turn of the fighter in a fresh bout with `input`. A
   * failure is a step with `error` (returned, never thrown).
   */
  step(fighterId: string, input: string, role: string): Promise<TroopStep>;
  /**
   * A step whose output must be JSON passing `schema`; asked once more, with what was wrong, when it
   * is not. `value` is absent when both attempts failed (both steps are recorded).
   */
  structured<T>(
    fighterId: string,
    input: string,
    schema: Record<string, unknown>,
    role: string,
  ): Promise<{ value?: T; step: TroopStep }>;
  /** The troop's rotation counter, advanced by one (survives restarts): the value before. */
  rotate(): Promise<number>;
}

/** How a strategy ended a task: a result, or an error; with the votes or the reason it kept. */
export interface StrategyOutcome {
  result?: string;
  error?: RecordedError;
  votes?: TroopVote[];
  reason?: SpecialistReason;
}

/** A troop coordination strategy (`pipeline`, `broadcast`, …), from a strategy plugin. */
export interface TroopStrategy {
  readonly name: string;
  run(task: StrategyTask): Promise<StrategyOutcome>;
}

/** A messaging platform as the rest of Spar uses it (the `channel_notify` move, `spar channel status`). */
export interface ChannelAdapter {
  /** The platform id: `telegram`, `discord`, `slack`. */
  readonly platform: string;
  /**
   * Posts `text` to `chat` (the platform's chat or channel id), or to the channel's configured
   * `notify_chat` when none is given; long text is split to the platform's limits.
   */
  send(text: string, chat?: string): Promise<{ chat: string; message_ids: string[] }>;
  /** How the channel is doing, for `spar channel status`. */
  status(): Promise<ChannelStatus>;
}

export interface ChannelStatus {
  platform: string;
  /** `webhook` (deliveries through the tunnel) or `gateway` (a connection the daemon keeps). */
  mode: string;
  connected: boolean;
  /** The URL the platform delivers to, as registered (webhook mode). */
  webhook_url?: string;
  /** The fighter that answers. */
  fighter: string;
  allowlist_size: number;
  last_inbound_at?: string;
  inbound: number;
  outbound: number;
  /** Deliveries refused: bad or missing signature, sender not allowed, sender over its rate. */
  refused: { signature: number; allowlist: number; rate: number };
  /** The last problem (registration failed, the gateway dropped), when there is one. */
  error?: string;
}

/** The public side of the tunnel: where platforms reach the webhook listener. */
export interface TunnelInfo {
  /** `https://…`, no trailing slash. */
  url: string;
  mode: "quick" | "named" | "manual";
  /** Why the tunnel is down, when it went down after opening (cloudflared exited). */
  error?: string;
}
