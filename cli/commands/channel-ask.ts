/**
 * How `spar channel setup` talks to its user. On a terminal (stdin and stdout both TTYs, no
 * `--json`) it is a wizard drawn with @clack/prompts, imported only then, asking for what the flags
 * and the saved config leave open. Anywhere else nothing is asked: a missing value is an error
 * naming the flag that gives it, and progress is plain lines on stdout (none with `--json`, whose
 * single document is printed at the end).
 */
import { SparError } from "../../sdk/errors.js";
import { printable } from "../output.js";

type Clack = typeof import("@clack/prompts");

export interface Choice<T extends string> {
  value: T;
  label: string;
  hint?: string;
}

export interface Asker {
  readonly interactive: boolean;
  /**
   * `given` when there is one; otherwise, on a terminal, the answer to a prompt (checked by
   * `validate`, which returns what is wrong); otherwise VALIDATION_FAILED saying which `flag` to give.
   */
  value(
    given: string | undefined,
    flag: string,
    prompt: {
      message: string;
      placeholder?: string;
      secret?: boolean;
      validate?: (v: string) => string | undefined;
    },
  ): Promise<string>;
  /** `given`, else on a terminal the choice made, else `fallback`. */
  choose<T extends string>(
    given: T | undefined,
    message: string,
    choices: Choice<T>[],
    fallback: T,
  ): Promise<T>;
  /** On a terminal without `--yes`, asks; elsewhere true. */
  confirm(message: string): Promise<boolean>;
  /** A step done. */
  step(line: string): void;
  /** Something the user should act on. */
  warn(line: string): void;
  /** A block of lines under a title (the summary, the next steps). */
  note(title: string, lines: string[]): void;
  /** The last line. */
  end(line: string): void;
}

export async function createAsker(options: { json?: boolean; yes?: boolean; title: string }): Promise<Asker> {
  const interactive = !options.json && process.stdin.isTTY === true && process.stdout.isTTY === true;
  if (!interactive) return plainAsker(options.json === true, options.title);
  const clack = await import("@clack/prompts");
  clack.intro(options.title);
  return clackAsker(clack, options.yes === true);
}

function plainAsker(json: boolean, command: string): Asker {
  const say = (text: string) => {
    if (!json) process.stdout.write(`${printable(text)}\n`);
  };
  return {
    interactive: false,
    async value(given, flag) {
      if (given !== undefined) return given;
      throw new SparError("VALIDATION_FAILED", `${command} needs ${flag}; run it in a terminal to be asked`);
    },
    async choose(given, _message, _choices, fallback) {
      return given ?? fallback;
    },
    async confirm() {
      return true;
    },
    step: say,
    warn: (line) => {
      if (json) return;
      process.stderr.write(`spar: ${printable(line)}\n`);
    },
    note: (title, lines) => say([`${title}:`, ...lines.map((l) => `  ${l}`)].join("\n")),
    end: say,
  };
}

function clackAsker(clack: Clack, yes: boolean): Asker {
  const answered = <T>(value: T): Exclude<T, symbol> => {
    if (clack.isCancel(value)) {
      clack.cancel("Cancelled: nothing was changed");
      throw new SparError("CANCELLED", "setup cancelled; nothing was changed");
    }
    return value as Exclude<T, symbol>;
  };
  return {
    interactive: true,
    async value(given, _flag, prompt) {
      if (given !== undefined) return given;
      const ask = prompt.secret ? clack.password : clack.text;
      const answer = await ask({
        message: prompt.message,
        ...(prompt.placeholder && !prompt.secret ? { placeholder: prompt.placeholder } : {}),
        validate: (v) => {
          const text = (v ?? "").trim();
          if (!text) return "an answer is needed (Ctrl-C to stop)";
          return prompt.validate?.(text);
        },
      });
      return answered(answer).trim();
    },
    async choose(given, message, choices, fallback) {
      if (given !== undefined) return given;
      // clack's Option type is conditional on the value type; ours are plain strings.
      const options = choices as Parameters<typeof clack.select<typeof fallback>>[0]["options"];
      return answered(await clack.select({ message, options, initialValue: fallback }));
    },
    async confirm(message) {
      if (yes) return true;
      return answered(await clack.confirm({ message }));
    },
    step: (line) => clack.log.success(printable(line)),
    warn: (line) => clack.log.warn(printable(line)),
    note: (title, lines) => clack.note(lines.map(printable).join("\n"), title),
    end: (line) => clack.outro(printable(line)),
  };
}
