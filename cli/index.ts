import { setFlagsFromString } from "node:v8";
import { KERNEL_VERSION } from "../sdk/version.js";
import { help } from "./help.js";
import { inTermsOfOptions, reportError } from "./output.js";
import { type CommandLine, parseCommandLine } from "./parse.js";

/**
 * The `spar` program: `spar <command> [<action>] [arguments] [options]`, every command and action
 * declared once in registry.ts. A command's module is imported only when it runs, so `--help` and
 * `--version` load nothing but the registry.
 */
const argv = process.argv.slice(2);
// Known before parsing, so that a command line the parser refuses still gets its error as JSON.
const end = argv.indexOf("--");
const json = (end < 0 ? argv : argv.slice(0, end)).includes("--json");

// A reader that stops early (`spar status | head -1`) closes the pipe: every later write fails with
// EPIPE, which Node raises as an unhandled error with a stack trace. The reader has what it wanted,
// so the command ends quietly, keeping the exit code it had (0 unless it had already failed), as
// `git log | head` does. Anything else on these streams is a real failure and stays one.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    process.exit();
  });
}

let line: CommandLine | undefined;
try {
  line = parseCommandLine(argv);
  if (line.kind === "version") {
    const facts = {
      version: KERNEL_VERSION,
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
    };
    process.stdout.write(
      line.json
        ? `${JSON.stringify(facts, null, 2)}\n`
        : `spar ${facts.version} (Node.js ${facts.node}, ${facts.platform})\n`,
    );
  } else if (line.kind === "help") {
    process.stdout.write(await help(line.command, KERNEL_VERSION, line.json));
  } else {
    // fetch parses HTTP with undici's WebAssembly parser, which V8 recompiles with its optimising
    // tier in the background; the process then waits for that compile before it exits, about
    // 150-200 ms a call for nothing. One command's requests run well on the baseline tier. The
    // daemon (`spar start`) lives long and keeps the optimising one.
    if (line.command.name !== "start") setFlagsFromString("--liftoff-only");
    await line.command.run(line);
  }
} catch (err) {
  reportError(line?.kind === "run" ? inTermsOfOptions(err, line.declared, line.options) : err, json);
}
