/**
 * The line-pattern rules of the skill scanner, run over the views of a text (scan-text.ts): "code"
 * for commands and paths (case-insensitive), "prose" for phrasing aimed at the model (lowercased,
 * look-alikes folded, emphasis dropped; a phrase's words may be separated by a few filler words,
 * punctuation and line breaks). The rules themselves live in scan-rules-*.ts.
 */
import type { Context, Pattern } from "./scan-match.js";
import { DESTRUCTIVE, ENCODED_EXEC, PIPE_TO_SHELL } from "./scan-rules-commands.js";
import { CREDENTIAL_HARVEST, EXFILTRATION } from "./scan-rules-data.js";
import { EXFILTRATION_HOST, PERSISTENCE, REMOTE_CODE, SPAR_ACCESS } from "./scan-rules-host.js";
import { PROMPT_INJECTION_LANG } from "./scan-rules-lang.js";
import { PROMPT_INJECTION } from "./scan-rules-model.js";
import { buildView, type Hit, leetView } from "./scan-text.js";

export const LINE_PATTERNS: readonly Pattern[] = [
  ...PIPE_TO_SHELL,
  ...PROMPT_INJECTION,
  ...PROMPT_INJECTION_LANG,
  ...CREDENTIAL_HARVEST,
  ...EXFILTRATION,
  ...EXFILTRATION_HOST,
  ...REMOTE_CODE,
  ...PERSISTENCE,
  ...SPAR_ACCESS,
  ...DESTRUCTIVE,
  ...ENCODED_EXEC,
];

/**
 * Runs every line pattern over `text`. Hits carry offsets in `text`. Prompt-injection patterns
 * also run over the prose view with digits read as letters ("1gn0re prev10us").
 */
export function scanPatterns(text: string, patterns: readonly Pattern[] = LINE_PATTERNS): Hit[] {
  const codeView = buildView(text, "code");
  const proseView = buildView(text, "prose");
  const leet = leetView(proseView);
  const hits: Hit[] = [];
  for (const pattern of patterns) {
    const views = pattern.view === "code" ? [codeView] : leet ? [proseView, leet] : [proseView];
    for (const view of views) {
      const ctx: Context = { view, source: text };
      for (const m of view.text.matchAll(pattern.re)) {
        const severity = pattern.judge ? pattern.judge(m as RegExpExecArray, ctx) : pattern.severity;
        if (severity === null) continue;
        hits.push({
          rule: pattern.rule,
          severity,
          index: view.origin[m.index] ?? 0,
          message: pattern.message,
        });
      }
    }
  }
  return hits;
}
