import { parseArgs } from "node:util";
import { SparError } from "../sdk/errors.js";
import {
  type ActionSpec,
  type CommandSpec,
  GLOBAL_OPTIONS,
  type OptionSpec,
  type ParsedOptions,
  SHORT_OPTIONS,
} from "./command-spec.js";
import { COMMANDS } from "./registry.js";

/**
 * The command line against the registry, with Spar's own errors (VALIDATION_FAILED, one line, the
 * valid choices named). node:util's parseArgs splits the words: it keeps values as written (`007`
 * stays text, `""` stays empty, a lone `-` is an argument) and leaves every judgement to this file.
 */
export type CommandLine =
  | { kind: "version"; json: boolean }
  | { kind: "help"; json: boolean; command?: CommandSpec }
  | {
      kind: "run";
      json: boolean;
      command: CommandSpec;
      action: string;
      args: string[];
      options: ParsedOptions;
      /** The options this command line may carry, to name one in the daemon's refusals. */
      declared: OptionSpec[];
    };

interface ArgSpec {
  name: string;
  required: boolean;
}

/** `<name> <public-key> [body]` → the arguments, in order. */
export function argSpecs(usage: string): ArgSpec[] {
  return [...usage.matchAll(/<([^>]+)>|\[([^\]]+)\]/g)].map((m) => ({
    name: (m[1] ?? m[2]) as string,
    required: m[1] !== undefined,
  }));
}

/** `spar key add <name> <public-key>`, for messages and help. */
export function usageOf(command: CommandSpec, action?: ActionSpec): string {
  if (!command.actions) return ["spar", command.name, command.args].filter(Boolean).join(" ");
  if (!action) return `spar ${command.name} <action>`;
  return ["spar", command.name, action.name, action.args].filter(Boolean).join(" ");
}

const fail = (message: string) => new SparError("VALIDATION_FAILED", message);
const names = (words: string[]) => words.join(", ");

/** Every option any command declares, by name, to split the words before the command is known. */
function allOptions(commands: CommandSpec[]): OptionSpec[] {
  return [
    ...GLOBAL_OPTIONS,
    ...commands.flatMap((c) => [...(c.options ?? []), ...(c.actions ?? []).flatMap((a) => a.options ?? [])]),
  ];
}

export function parseCommandLine(argv: string[], commands: CommandSpec[] = COMMANDS): CommandLine {
  const config: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const o of allOptions(commands)) {
    config[o.flag.slice(2)] = {
      type: o.value ? "string" : "boolean",
      ...(o.short ? { short: o.short } : {}),
    };
  }
  for (const [short, long] of Object.entries(SHORT_OPTIONS)) config[long] = { type: "boolean", short };
  const { tokens } = parseArgs({
    args: argv,
    options: config,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const words = tokens.flatMap((t) => (t.kind === "positional" ? [t.value] : []));
  const given = tokens.flatMap((t) => (t.kind === "option" ? [t] : []));
  const has = (name: string) => given.some((t) => t.name === name);
  const json = has("json");

  if (has("version")) return { kind: "version", json };
  const [name, actionName, ...rest] = words;
  if (name === undefined) {
    checkOptions(given, GLOBAL_OPTIONS, "spar");
    return { kind: "help", json };
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    throw fail(`unknown command "${name}"; commands: ${names(commands.map((c) => c.name))}`);
  }
  if (has("help")) return { kind: "help", json, command };

  let action: ActionSpec | undefined;
  let args = words.slice(1);
  if (command.actions) {
    const valid = names(command.actions.map((a) => a.name));
    if (actionName === undefined) throw fail(`${command.name} needs an action; actions: ${valid}`);
    action = command.actions.find((a) => a.name === actionName);
    if (!action) throw fail(`unknown action "${actionName}" for ${command.name}; actions: ${valid}`);
    args = rest;
  }
  const where = action ? `${command.name} ${action.name}` : command.name;
  checkArgs(args, argSpecs(action ? action.args : (command.args ?? "")), where, usageOf(command, action));
  const declared = [...(command.options ?? []), ...(action?.options ?? []), ...GLOBAL_OPTIONS];
  return {
    kind: "run",
    json,
    command,
    action: action?.name ?? "",
    args,
    options: checkOptions(given, declared, where),
    declared,
  };
}

function checkArgs(args: string[], specs: ArgSpec[], where: string, usage: string): void {
  const missing = specs.slice(args.length).find((s) => s.required);
  if (missing) throw fail(`${where} needs <${missing.name}>; usage: ${usage}`);
  if (args.length > specs.length) {
    const extra = args.slice(specs.length).map((a) => JSON.stringify(a));
    const hint = specs.length > 0 ? " (quote an argument that has spaces)" : "";
    throw fail(`unexpected argument ${extra.join(" ")} for ${where}; usage: ${usage}${hint}`);
  }
}

type OptionToken = { name: string; rawName: string; value?: string; inlineValue?: boolean };

/** Each option must be declared where it is used, with a value exactly when it takes one. */
function checkOptions(given: OptionToken[], declared: OptionSpec[], where: string): ParsedOptions {
  const out: Record<string, string | boolean> = {};
  for (const o of declared) if (o.default !== undefined) out[camel(o.flag)] = o.default;
  for (const token of given) {
    const spec = declared.find((o) => o.flag === `--${token.name}`);
    const flag = `--${token.name}`;
    if (!spec) {
      const valid = names(declared.filter((o) => o.flag !== "--version").map((o) => o.flag));
      throw fail(`unknown option ${token.rawName} for ${where}; options: ${valid}`);
    }
    if (!spec.value) {
      if (token.value !== undefined) throw fail(`${flag} takes no value`);
      out[camel(spec.flag)] = true;
      continue;
    }
    const value = token.value;
    if (value === undefined || (!token.inlineValue && value.length > 1 && value.startsWith("-"))) {
      throw fail(
        `${flag} needs a value: ${flag} <${spec.value}> (write ${flag}=<value> for one starting with -)`,
      );
    }
    if (value === "") throw fail(`${flag} needs a value, not an empty string: ${flag} <${spec.value}>`);
    if (spec.integer) checkInteger(flag, value, spec.integer);
    const earlier = given.indexOf(token) > given.findIndex((t) => t.name === token.name);
    out[camel(spec.flag)] = spec.repeatable && earlier ? `${out[camel(spec.flag)]},${value}` : value;
  }
  return out;
}

/** Digits only (no sign, point, exponent or spaces, which Number() would take), within the range. */
function checkInteger(flag: string, value: string, range: { min: number; max: number }): void {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= range.min && n <= range.max)) {
    throw fail(
      `${flag} must be a whole number from ${range.min} to ${range.max}, not ${JSON.stringify(value)}`,
    );
  }
}

/** `--key-id` → `keyId`. */
function camel(flag: string): string {
  return flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}
