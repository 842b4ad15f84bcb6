/**
 * The shape of a `spar` command as data (cli/registry.ts lists them): its options, actions and what
 * the parser hands its code, and the options every command takes.
 */

/** An option. `value` names what it takes (`--fighter <name|id>`); without it the option is a flag. */
export interface OptionSpec {
  flag: `--${string}`;
  value?: string;
  summary: string;
  default?: string;
  /** A whole number in this range, checked by the parser before the command runs or calls the daemon. */
  integer?: { min: number; max: number };
  /**
   * The request field the daemon reads this option's value from, when it is not the flag's own name
   * (`--bout` is `bout_id`), so a field the daemon refuses is reported under the option typed.
   */
  field?: string;
  /** A one-letter form (`-f` for `--follow`); the parser refuses it for commands that do not declare it. */
  short?: string;
  /** May be given more than once (`--skill a --skill b`): the values reach the command joined by ",". */
  repeatable?: boolean;
}

export interface ActionSpec {
  name: string;
  /** Its arguments as shown in help: `<name> <public-key>`, `[body]` when optional. */
  args: string;
  summary: string;
  options?: OptionSpec[];
  /** More for `--help`, computed only then (the fighter kinds come from the package's files). */
  more?: () => Promise<Record<string, string[]>>;
}

/** What the parser hands a command: its action (nouns only), arguments and options, by declared type. */
export interface Call {
  action: string;
  args: string[];
  options: ParsedOptions;
}

/** Option values by camelCase name: a flag is a boolean, an option with a value a non-empty string. */
export type ParsedOptions = Readonly<Record<string, string | boolean | undefined>> & { json?: boolean };

export interface CommandSpec {
  name: string;
  summary: string;
  /** A command without actions: its arguments, like an action's. */
  args?: string;
  /** A noun: `spar <name> <action>`. */
  actions?: ActionSpec[];
  /** Options for the command itself (or, for a noun, every action). */
  options?: OptionSpec[];
  run(call: Call): Promise<void>;
}

/** Accepted everywhere. */
export const GLOBAL_OPTIONS: OptionSpec[] = [
  { flag: "--json", summary: 'Machine-readable output; an error is {"error":{"code","message"}} on stdout' },
  { flag: "--help", summary: "Show help: spar <command> --help lists its actions and options" },
  { flag: "--version", summary: "Print the version" },
];

/** One-letter forms of global options. */
export const SHORT_OPTIONS: Record<string, string> = { h: "help", v: "version" };
