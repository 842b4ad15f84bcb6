import { type ActionSpec, type CommandSpec, GLOBAL_OPTIONS, type OptionSpec } from "./command-spec.js";
import { argSpecs, usageOf } from "./parse.js";
import { COMMANDS } from "./registry.js";

/** `spar --help` and `spar <command> --help`, from the registry (text, or JSON with --json). */
export async function help(
  command: CommandSpec | undefined,
  version: string,
  json: boolean,
): Promise<string> {
  if (json) {
    const shape = command
      ? await describe(command)
      : { version, commands: await Promise.all(COMMANDS.map(describe)) };
    return `${JSON.stringify(shape, null, 2)}\n`;
  }
  return command ? commandHelp(command) : overview(version);
}

function overview(version: string): string {
  const heads = COMMANDS.map((c) => (c.actions ? `${c.name} <action>` : usageOf(c).slice("spar ".length)));
  const lines = COMMANDS.map((c, i) => {
    const actions = c.actions ? `: ${c.actions.map((a) => a.name).join(", ")}` : "";
    return [heads[i] as string, `${c.summary}${actions}`];
  });
  return [
    `spar ${version}: hosts LLM agents on this machine`,
    "",
    "Usage: spar <command> [<action>] [arguments] [options]",
    "",
    "Commands:",
    columns(lines),
    "",
    "Options:",
    columns(GLOBAL_OPTIONS.map(optionLine)),
    "",
    "Run spar <command> --help for its actions, arguments and options.",
    "",
  ].join("\n");
}

async function commandHelp(command: CommandSpec): Promise<string> {
  const out = [`Usage: ${usageOf(command)} [options]`, "", command.summary, ""];
  if (command.actions) {
    out.push("Actions:");
    const rows: string[][] = [];
    for (const action of command.actions) {
      rows.push([[action.name, action.args].filter(Boolean).join(" "), action.summary]);
      for (const [label, values] of Object.entries((await action.more?.()) ?? {})) {
        rows.push(["", `${label}: ${values.join(", ")}`]);
      }
      for (const o of action.options ?? []) {
        rows.push(optionLine(o).map((cell, i) => (i ? cell : `  ${cell}`)));
      }
    }
    out.push(columns(rows), "");
  }
  const options = [...(command.options ?? []), ...GLOBAL_OPTIONS.filter((o) => o.flag !== "--version")];
  out.push("Options:", columns(options.map(optionLine)), "");
  return out.join("\n");
}

function optionLine(o: OptionSpec): string[] {
  const shown =
    o.flag === "--help"
      ? "-h, --help"
      : o.flag === "--version"
        ? "-v, --version"
        : o.short
          ? `-${o.short}, ${o.flag}`
          : o.flag;
  const head = o.value ? `${shown} <${o.value}>` : shown;
  return [head, o.default === undefined ? o.summary : `${o.summary} (default: ${o.default})`];
}

function columns(rows: string[][]): string {
  const width = Math.max(...rows.map((r) => (r[0] ?? "").length));
  return rows.map(([head = "", text = ""]) => `  ${head.padEnd(width)}  ${text}`.trimEnd()).join("\n");
}

/** A command as data, for `--help --json`. */
async function describe(command: CommandSpec) {
  const option = (o: OptionSpec) => ({
    flag: o.flag,
    value: o.value ?? null,
    summary: o.summary,
    default: o.default ?? null,
  });
  const action = async (a: ActionSpec) => ({
    name: a.name,
    usage: usageOf(command, a),
    args: argSpecs(a.args),
    summary: a.summary,
    options: (a.options ?? []).map(option),
    ...((await a.more?.()) ?? {}),
  });
  return {
    name: command.name,
    usage: usageOf(command),
    summary: command.summary,
    ...(command.actions
      ? { actions: await Promise.all(command.actions.map(action)) }
      : { args: argSpecs(command.args ?? "") }),
    options: (command.options ?? []).map(option),
  };
}
