import { cac } from "cac";
import { KERNEL_VERSION } from "../kernel/version.js";
import { runAction } from "./output.js";

/**
 * The `spar` program. Each action imports its command module only when it runs, so `--help` and
 * `--version` load nothing but cac. cac has no multi-word commands: nouns take an `<action>`.
 */
const cli = cac("spar");

cli.option("--json", "Print machine-readable JSON");

cli
  .command("init", "Create the data dir, config.toml, master key and CLI key pair")
  .action((options) => runAction(async () => (await import("./commands/init.js")).init(options)));

cli
  .command("start", "Start the daemon in the foreground (runs init first when needed)")
  .option("--detach", "Run in the background; stop it with `spar stop`")
  .action((options) => runAction(async () => (await import("./commands/start.js")).start(options)));

cli
  .command("stop", "Stop a daemon started with --detach")
  .action((options) => runAction(async () => (await import("./commands/start.js")).stop(options)));

cli
  .command("status", "Check that the daemon runs; show its fighters")
  .action((options) => runAction(async () => (await import("./commands/status.js")).status(options)));

cli
  .command("chat <text>", "Send a message to a fighter (the default fighter unless --fighter)")
  .option("--fighter <name>", "Fighter name or id", { default: "spar" })
  .option("--bout <id>", "Continue this bout instead of the fighter's latest")
  .option("--raw", "Print the model's text as is, terminal control sequences included")
  .action((text: string, options) =>
    runAction(async () => (await import("./commands/chat.js")).chat(text, options)),
  );

cli
  .command("fighter <action> [target]", "Manage fighters: spawn <kind> | list | kill <name|id>")
  .option("--name <name>", "With spawn: the new fighter's name (default: the kind)")
  .action((action: string, target: string | undefined, options) =>
    runAction(async () => (await import("./commands/fighter.js")).fighter(action, target, options)),
  );

cli
  .command("doctor", "Check the config, the data dir, the daemon and every configured provider")
  .action((options) => runAction(async () => (await import("./commands/doctor.js")).doctor(options)));

cli
  .command(
    "key <action> [name] [publicKey]",
    "Manage request-signing keys: add <name> <public key> | list | remove <name>",
  )
  .action((action: string, name: string | undefined, publicKey: string | undefined, options) =>
    runAction(async () => (await import("./commands/key.js")).key(action, name, publicKey, options)),
  );

cli
  .command("plugin <action>", "Inspect plugins: list (reads manifests only; no plugin code runs)")
  .action((action: string, options) =>
    runAction(async () => (await import("./commands/plugin.js")).plugin(action, options)),
  );

cli
  .command("move <action>", "Inspect moves: list (reads manifests only)")
  .action((action: string, options) =>
    runAction(async () => (await import("./commands/plugin.js")).move(action, options)),
  );

cli
  .command("security <action>", "Audit this installation: security audit (exits 1 on a high finding)")
  .action((action: string, options) =>
    runAction(async () => (await import("./commands/security.js")).security(action, options)),
  );

cli.help();
cli.version(KERNEL_VERSION);

try {
  cli.parse(process.argv, { run: false });
  if (!cli.matchedCommand && cli.args.length > 0) {
    throw new Error(`unknown command "${cli.args[0]}"; see spar --help`);
  }
  if (!cli.matchedCommand && !cli.options.help && !cli.options.version) cli.outputHelp();
  else await cli.runMatchedCommand();
} catch (err) {
  process.stderr.write(`spar: ${(err as Error).message}\n`);
  process.exitCode = 1;
}
