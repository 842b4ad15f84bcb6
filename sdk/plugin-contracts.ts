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
  /** Approve / Deny buttons in a chat (README "Approvals"); absent on a platform without them. */
  readonly approvals?: ChannelApprovals;
}

/**
 * What a chat is shown of a call waiting for approval: every field already shortened and stripped of
 * anything that looks like a secret (the kit's `approvalPrompt` builds it), so a platform only lays
 * it out.
 */
export interface ApprovalPrompt {
  request_id: string;
  fighter: string;
  move: string;
  /** The call's main argument (the command line, the path …), shortened and masked. */
  subject: string;
  /** Why it was asked: the rule or default, and the turn's taint. */
  why: string;
  /** The untrusted content the turn read before asking, for people (`web https://…`), when any. */
  taint?: string;
  expires_at: string;
}

/**
 * A press of Approve or Deny, as a channel hands it to the approvals plugin: who pressed (already
 * checked against the channel's owners), in which chat, on which request.
 */
export interface ApprovalPress {
  request_id: string;
  approve: boolean;
  platform: string;
  /** The chat the pressed message is in: the request must have come from it. */
  chat: string;
  /** The sender's platform id. */
  sender: string;
}

/**
 * How a press ended: `answered` (this press decided it), `already` (answered, expired or cancelled
 * before: `status` says how), `not_found` (no such request, or not one from this chat), `refused`
 * (the presser may not answer; nothing changed). `text` is a short line for the presser, `outcome`
 * what the message should now say in place of its buttons (absent: leave the message as it is).
 */
export interface ApprovalPressOutcome {
  result: "answered" | "already" | "not_found" | "refused";
  status?: string;
  text: string;
  outcome?: string;
}

/** Answers a press (the approvals plugin supplies it: `ChannelApprovals.answerWith`). */
export type ApprovalAnswerer = (press: ApprovalPress) => Promise<ApprovalPressOutcome>;

/**
 * A channel's Approve / Deny buttons. The approvals plugin posts the prompt to the chat a waiting
 * turn came from (`ask`), edits it once the request ends some other way (`ended`), and hands each
 * channel, when the daemon is ready, the function that answers presses (`answerWith`). The channel
 * checks the presser (its owners; with none, its allowlist) before the answerer sees the press.
 *
 * @example
 * const message = await adapter.approvals?.ask("42", prompt);
 * adapter.approvals?.answerWith(async (press) => answer(press));
 */
export interface ChannelApprovals {
  /** Posts the prompt with Approve / Deny buttons to `chat`; returns the message's id. */
  ask(chat: string, prompt: ApprovalPrompt): Promise<string>;
  /** Replaces the buttons of the message `ask` posted with how the request ended (`outcome`). */
  ended(chat: string, messageId: string, prompt: ApprovalPrompt, outcome: string): Promise<void>;
  /** Where presses go from now on; before it is called a press is told approvals cannot be answered here. */
  answerWith(answer: ApprovalAnswerer): void;
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
