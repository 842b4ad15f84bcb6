import { KERNEL_VERSION } from "../sdk/version.js";
import { help } from "./help.js";
import { reportError } from "./output.js";
import { parseCommandLine } from "./parse.js";

/**
 * The `spar` program: `spar <command> [<action>] [arguments] [options]`, every command and action
 * declared once in registry.ts. A command's module is imported only when it runs, so `--help` and
 * `--version` load nothing but the registry.
 */
const argv = process.argv.slice(2);
// Known before parsing, so that a command line the parser refuses still gets its error as JSON.
const end = argv.indexOf("--");
const json = (end < 0 ? argv : argv.slice(0, end)).includes("--json");

try {
  const line = parseCommandLine(argv);
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
    await line.command.run(line);
  }
} catch (err) {
  reportError(err, json);
}
