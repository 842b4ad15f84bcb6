/**
 * Every `spar` command, as data: its arguments, options and, for a noun, its actions. The parser's
 * errors (unknown command, unknown action, a missing argument, an option that does not belong) and
 * `--help` both read this one list, so they cannot disagree. A command's code is imported only when
 * it runs: nothing here imports a command module, which keeps `--help` and `--version` fast.
 *
 * New commands follow the same shape: `spar <noun> <action> [args] [options]`, one entry per noun.
 */

import type { CommandSpec } from "./command-spec.js";
import { KEYS } from "./specs/access.js";
import { GORILLAS, TROOPS } from "./specs/autonomy.js";
import { CHANNELS } from "./specs/channels.js";
import { CONVERSATIONS, OVERSIGHT } from "./specs/conversations.js";
import { LIFECYCLE, MAINTENANCE, SECURITY } from "./specs/lifecycle.js";
import { MOVES } from "./specs/moves.js";
import { OPERATIONS } from "./specs/operations.js";

/** In the order `spar --help` lists them. */
export const COMMANDS: CommandSpec[] = [
  ...LIFECYCLE,
  ...CONVERSATIONS,
  ...GORILLAS,
  ...OVERSIGHT,
  ...TROOPS,
  ...CHANNELS,
  ...KEYS,
  ...MAINTENANCE,
  ...OPERATIONS,
  ...MOVES,
  ...SECURITY,
];
