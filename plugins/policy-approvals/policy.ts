/**
 * The approvals policy (README "Approvals"), as a pure function of what a call is and what the
 * operator configured: each call is `allow`, `ask` or `deny`, from, in order, the operator's rules
 * (`[[approvals.rules]]`, first match), the rules `--always` answers stored, the fighter's grant
 * (`approval = "ask" | "deny"`), then the defaults. A tainted turn (it has taken in content the
 * operator did not write) then asks, or is denied, before any side effect outside the workspace,
 * unless a rule allowed the call by name. The facts that need the disk or the store (does the file
 * exist, was this chat used before) are gathered by the caller (facts.ts) and handed in.
 */
import type { MoveEffects, TaintSource } from "../../sdk/index.js";

export type Action = "allow" | "ask" | "deny";

/** One `[[approvals.rules]]` table, as config.toml gives it. */
export interface ConfigRule {
  /** A fighter's name or id, or `*` for every fighter. */
  fighter: string;
  /** A move's name, or a glob over names (`mcp_mail_*`). */
  move: string;
  /** A glob over the call's main argument (`subjectOf`), or the call's exact canonical arguments. */
  pattern?: string;
  action: Action;
}

/** A rule an `--always` answer stored: it allows that fighter's call, exactly, or by `pattern`. */
export interface StoredRule {
  id: string;
  fighter_id: string;
  fighter: string;
  move: string;
  /** A glob over the main argument; absent: `arguments` exactly. */
  pattern?: string;
  /** The canonical arguments of the call it was made from. */
  arguments?: string;
  created_at: string;
  created_by: string;
  request_id?: string;
}

export interface ApprovalSettings {
  /** `off`: every call runs as the grants allow it, unasked (an audit finding). */
  mode: "on" | "off";
  /** What a tainted turn's side effects outside the workspace need. */
  after_untrusted: "ask" | "deny" | "off";
  /** How long a request waits for its answer. */
  timeout_s: number;
  rules: ConfigRule[];
}

/** What the policy needs to know about one call. */
export interface CallFacts {
  move: string;
  fighter: { id: string; name: string };
  /** The call's main argument, as a rule's pattern reads it. */
  subject: string;
  /** Its arguments as canonical JSON. */
  canonical: string;
  effects: MoveEffects;
  destructive: boolean;
  /** The `approval` of each grant of the fighter's that allows the move. */
  grants: readonly ("ask" | "deny" | undefined)[];
  taint: readonly TaintSource[];
  /** A file move's target lies outside the fighter's workspace; `exists`: it is there already. */
  file?: { outside: boolean; exists: boolean };
  /** `channel_notify` to a chat it names: whether this fighter has posted there before. */
  notify?: { target: string; known: boolean };
  /** `web_fetch`: whether its URL has a query string and its host was fetched earlier in the turn. */
  fetch?: { host: string; query: boolean; seen: boolean };
}

export interface Decision {
  action: Action;
  /** Why, in words for the operator and the model: the rule or default, and the taint. */
  why: string;
  /** The rule that decided, when one did: `config:<n>` (its place in config.toml) or a stored rule's id. */
  rule?: string;
}

/** Moves that ask by default, whatever their arguments. */
const ASK_ALWAYS: Readonly<Record<string, string>> = {
  shell_exec: "shell_exec runs a program",
  fighter_spawn: "fighter_spawn makes a fighter that lasts",
  schedule_add: "schedule_add makes a turn that runs later with no one watching",
};

/** Origins with no one to ask: an `ask` there is a refusal at once (APPROVAL_REQUIRED). */
export function unattended(origin: string): boolean {
  return origin === "schedule" || origin.startsWith("gorilla:");
}

/**
 * Whether `text` matches `glob` as a whole: `*` any run of characters (spaces and `/` included),
 * `?` any one, everything else itself.
 *
 * @example
 * globMatches("git *", "git log --oneline"); // true
 */
export function globMatches(glob: string, text: string): boolean {
  const source = glob.replace(/[.+^${}()|[\]\\*?]/g, (c) =>
    c === "*" ? "[\\s\\S]*" : c === "?" ? "[\\s\\S]" : `\\${c}`,
  );
  return new RegExp(`^${source}$`).test(text);
}

function ruleFits(rule: { fighter: string; move: string; pattern?: string }, facts: CallFacts): boolean {
  const fighter =
    rule.fighter === "*" || rule.fighter === facts.fighter.name || rule.fighter === facts.fighter.id;
  if (!fighter || !globMatches(rule.move, facts.move)) return false;
  return (
    rule.pattern === undefined || rule.pattern === facts.canonical || globMatches(rule.pattern, facts.subject)
  );
}

function storedFits(rule: StoredRule, facts: CallFacts): boolean {
  if (rule.fighter_id !== facts.fighter.id || rule.move !== facts.move) return false;
  return rule.pattern !== undefined
    ? globMatches(rule.pattern, facts.subject)
    : rule.arguments === facts.canonical;
}

/** The untrusted content a turn took in, in words: "this turn read https://… (web_fetch)". */
export function taintWords(taint: readonly TaintSource[]): string {
  const shown = taint.slice(0, 3).map((t) => `${t.detail} (${t.kind}${t.move ? `, ${t.move}` : ""})`);
  const more = taint.length > 3 ? ` and ${taint.length - 3} more` : "";
  return `this turn took in untrusted content: ${shown.join(", ")}${more}`;
}

/** Whether the call reaches outside the workspace in a way taint must not drive on its own. */
function sideEffectOutside(facts: CallFacts): boolean {
  if (facts.fetch) return facts.fetch.query && !facts.fetch.seen;
  if (facts.effects === "external") return true;
  return facts.effects === "workspace" && facts.file?.outside === true;
}

function base(
  facts: CallFacts,
  settings: ApprovalSettings,
  stored: readonly StoredRule[],
): Decision & { explicit?: true } {
  for (const [n, rule] of settings.rules.entries()) {
    if (!ruleFits(rule, facts)) continue;
    const id = `config:${n}`;
    return {
      action: rule.action,
      why: `the operator's rule ${id} (${describeRule(rule)}) says ${rule.action}`,
      rule: id,
      explicit: true,
    };
  }
  const always = stored.find((rule) => storedFits(rule, facts));
  if (always) {
    const how =
      always.pattern !== undefined ? `pattern ${JSON.stringify(always.pattern)}` : "this exact call";
    return {
      action: "allow",
      why: `rule ${always.id} (approved always by ${always.created_by}: ${how})`,
      rule: always.id,
      explicit: true,
    };
  }
  if (facts.grants.includes("deny"))
    return { action: "deny", why: `the fighter's ${facts.move} grant says approval = "deny"` };
  if (facts.grants.includes("ask"))
    return { action: "ask", why: `the fighter's ${facts.move} grant says approval = "ask"` };
  const always_asked = ASK_ALWAYS[facts.move];
  if (always_asked) return { action: "ask", why: `${always_asked} (the default: ask)` };
  if (facts.file?.outside && facts.file.exists) {
    return {
      action: "ask",
      why: `${facts.move} would change an existing file outside the fighter's workspace (the default: ask)`,
    };
  }
  if (facts.notify && !facts.notify.known) {
    return {
      action: "ask",
      why: `channel_notify to ${facts.notify.target}, a chat this fighter has never posted to (the default: ask)`,
    };
  }
  if (facts.destructive) {
    return {
      action: "ask",
      why: `${facts.move} may destroy or overwrite what it reaches, or its server does not say it cannot (the default: ask)`,
    };
  }
  return { action: "allow", why: "allowed by default" };
}

/**
 * The decision for one call.
 *
 * @example
 * decide(facts, { mode: "on", after_untrusted: "ask", timeout_s: 900, rules: [] }, []).action; // "ask" for shell_exec
 */
export function decide(
  facts: CallFacts,
  settings: ApprovalSettings,
  stored: readonly StoredRule[],
): Decision {
  if (settings.mode === "off") return { action: "allow", why: "[approvals] mode is off" };
  const { explicit, ...decision } = base(facts, settings, stored);
  if (decision.action === "deny" || facts.taint.length === 0 || settings.after_untrusted === "off")
    return decision;
  if (explicit && decision.action === "allow") return decision;
  if (!sideEffectOutside(facts)) return decision;
  const tainted = `${taintWords(facts.taint)} before asking to run ${facts.move}`;
  const action =
    settings.after_untrusted === "deny" ? "deny" : decision.action === "allow" ? "ask" : decision.action;
  const why =
    decision.action === "allow"
      ? `${tainted} ([approvals] after_untrusted = "${settings.after_untrusted}")`
      : `${decision.why}; and ${tainted}`;
  return { ...decision, action, why };
}

function describeRule(rule: ConfigRule): string {
  const pattern = rule.pattern !== undefined ? ` ${JSON.stringify(rule.pattern)}` : "";
  return `fighter ${JSON.stringify(rule.fighter)}, move ${JSON.stringify(rule.move)}${pattern}`;
}
