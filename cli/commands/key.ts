import { existsSync, readFileSync } from "node:fs";
import { SparError } from "../../kernel/errors.js";
import { resolveHome } from "../../lib/home.js";
import { addKey, listKeys, removeKey } from "../../lib/keys.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/**
 * `spar key add|list|remove`: the public keys allowed to sign requests, as files in the data dir.
 * A running daemon sees a change on its next request; no restart is needed.
 */
export async function key(
  action: string,
  name: string | undefined,
  publicKey: string | undefined,
  options: GlobalOptions,
): Promise<void> {
  const home = resolveHome();
  switch (action) {
    case "add": {
      if (!name || !publicKey) {
        throw new SparError(
          "VALIDATION_FAILED",
          "usage: spar key add <name> <public key: base64 of the raw 32 bytes, a PEM file, or - for stdin>",
        );
      }
      const added = addKey(home, name, await keyText(publicKey));
      if (options.json) return printJson(added);
      process.stdout.write(`Authorized ${added.name} (${added.fingerprint})\n`);
      return;
    }
    case "list": {
      const keys = listKeys(home);
      if (options.json) return printJson({ keys });
      process.stdout.write(
        `${table([["NAME", "FINGERPRINT"], ...keys.map((k) => [k.name, k.fingerprint])])}\n`,
      );
      return;
    }
    case "remove": {
      if (!name) throw new SparError("VALIDATION_FAILED", "usage: spar key remove <name>");
      removeKey(home, name);
      if (options.json) return printJson({ removed: name });
      process.stdout.write(`Removed ${name}\n`);
      return;
    }
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}"; use add, list or remove`);
  }
}

/**
 * The key as given: its text, a path to a file holding it (a PEM starts with "-----", which a
 * command line would take for an option), or "-" for standard input.
 */
async function keyText(argument: string): Promise<string> {
  if (argument === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  return existsSync(argument) ? readFileSync(argument, "utf8") : argument;
}
