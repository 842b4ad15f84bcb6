/**
 * The specialist strategy's choice: a deterministic score per troop member from the task's words
 * against what the member can do (its capability types, through a small keyword map), what it knows
 * (its skills' names) and what it says it is (its description and name). No model call: the same
 * task and troop always pick the same member, and the scores are kept on the task as the reason.
 */

import type { TroopMember } from "../../sdk/index.js";
import type { CAPABILITY_TYPES } from "../../sdk/schemas.js";
import { contentWords } from "../words.js";
import type { SpecialistReason } from "./records.js";

/** Points a task word earns a member, once per kind of match (a word can match all three). */
export const SPECIALIST_WEIGHTS = { capability: 3, skill: 2, description: 1 } as const;

/**
 * Words a task uses when it needs each kernel capability type. `full_access` is no speciality, so it
 * brings none; any other type (one from an installed plugin) brings the words of its own name.
 */
export const CAPABILITY_KEYWORDS: Record<(typeof CAPABILITY_TYPES)[number], readonly string[]> = {
  memory: ["memory", "remember", "recall", "note", "preference", "forget"],
  knowledge_graph: ["knowledge", "graph", "entity", "relation", "fact", "ontology"],
  file_read: ["file", "read", "document", "folder", "directory", "log", "csv", "json", "pdf"],
  file_write: ["file", "write", "save", "edit", "draft", "document", "report"],
  shell_exec: ["shell", "command", "bash", "script", "terminal", "install", "build", "compile", "git"],
  network: [
    "web",
    "fetch",
    "search",
    "url",
    "http",
    "https",
    "site",
    "website",
    "page",
    "online",
    "download",
    "api",
  ],
  agent_message: ["message", "ask", "delegate", "fighter", "agent", "colleague"],
  agent_spawn: ["spawn", "agent", "fighter", "delegate", "parallel"],
  channel_notify: ["notify", "notification", "alert", "telegram", "slack", "discord", "channel", "announce"],
  schedule: ["schedule", "daily", "weekly", "hourly", "remind", "reminder", "cron", "tomorrow", "recurring"],
  desktop: ["desktop", "screenshot", "screen", "click", "window", "gui", "mouse", "keyboard"],
  mcp: ["mcp", "tool", "server", "integration"],
  full_access: [],
};

/** A word's matching form: lowercase, with a plural "s" dropped ("files" matches "file"). */
function stem(word: string): string {
  return word.length > 3 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word;
}

function stems(words: readonly string[]): Set<string> {
  return new Set(words.map(stem));
}

/** The keywords of one capability type: the kernel type's, or (a plugin's type) its own name's words. */
function keywordsOf(type: string): readonly string[] {
  if (Object.hasOwn(CAPABILITY_KEYWORDS, type))
    return CAPABILITY_KEYWORDS[type as keyof typeof CAPABILITY_KEYWORDS];
  return contentWords(type);
}

function capabilityWords(types: readonly string[]): Set<string> {
  return stems(types.flatMap(keywordsOf));
}

/** One member's score: the points and the task words (as written, lowercased) that earned them. */
export interface MemberScore {
  fighter_id: string;
  score: number;
  matched: string[];
}

/**
 * Scores every member against the task's words: each distinct task word earns
 * SPECIALIST_WEIGHTS.capability when a capability's keywords hold it, .skill when a skill's name
 * does, and .description when the member's description or name does.
 *
 * @example
 * scoreMembers("fetch the page", [{ id: "f1", name: "web", description: "", capabilities: ["network"], skills: [] }]);
 * // [{ fighter_id: "f1", score: 7, matched: ["fetch", "page"] }]
 */
export function scoreMembers(task: string, members: readonly TroopMember[]): MemberScore[] {
  const words = contentWords(task);
  return members.map((member) => {
    const capability = capabilityWords(member.capabilities);
    const skill = stems(member.skills.flatMap(contentWords));
    const description = stems(contentWords(`${member.name} ${member.description}`));
    let score = 0;
    const matched: string[] = [];
    for (const word of words) {
      const s = stem(word);
      const points =
        (capability.has(s) ? SPECIALIST_WEIGHTS.capability : 0) +
        (skill.has(s) ? SPECIALIST_WEIGHTS.skill : 0) +
        (description.has(s) ? SPECIALIST_WEIGHTS.description : 0);
      if (points > 0) {
        score += points;
        matched.push(word);
      }
    }
    return { fighter_id: member.id, score, matched };
  });
}

/**
 * Picks the member with the highest score, the earliest in the troop's order on a tie, and says why
 * in one sentence. `members` must not be empty.
 *
 * @example
 * const { member, reason } = pickSpecialist(task.task, task.members);
 */
export function pickSpecialist(
  task: string,
  members: readonly TroopMember[],
): { member: TroopMember; reason: SpecialistReason } {
  const scores = scoreMembers(task, members);
  let best = 0;
  for (const [index, entry] of scores.entries()) {
    if (entry.score > (scores[best]?.score ?? 0)) best = index;
  }
  const member = members[best];
  const top = scores[best];
  if (!member || !top) throw new RangeError("pickSpecialist needs at least one member");
  const tied = members.filter((_, i) => i !== best && scores[i]?.score === top.score).map((m) => m.name);
  let text: string;
  if (top.score === 0) {
    text = `No member's capabilities, skills or description matched the task's words, so ${member.name}, the first member, was chosen.`;
  } else {
    text = `${member.name} scored highest (${top.score}) on ${top.matched.join(", ")}`;
    text += tied.length
      ? `, tied with ${tied.join(", ")}, and was chosen as the earliest in the troop's order.`
      : ".";
  }
  return { member, reason: { chosen: member.id, text, scores } };
}
