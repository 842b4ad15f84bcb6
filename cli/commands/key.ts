import { existsSync, readFileSync } from "node:fs";
import { resolveHome } from "../../lib/home.js";
import {
  addKey,
  CLI_KEY_ID,
  cliPublicKeyPath,
  listKeys,
  parseScope,
  removeKey,
  setScope,
} from "../../lib/keys.js";
import { SparError } from "../../sdk/errors.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/**
 * `spar key add|list|scope|remove`: the public keys allowed to sign requests, and what each may do
 * (`--scope`, default admin), as files in the data dir.
 * A running daemon sees a change on its next request; no restart is needed. The parser has checked
 * the arguments each action needs.
 */
export async function key(
  action: string,
  args: string[],
  options: GlobalOptions & { force?: boolean; scope?: string },
): Promise<void> {
  const home = resolveHome();
  const [name = "", publicKey = ""] = args;
  switch (action) {
    case "add": {
      // The scope is read first: a typo in it authorizes nothing.
      const scope = parseScope(options.scope ?? "admin");
      const added = addKey(home, name, await keyText(publicKey), scope);
      if (options.json) return printJson(added);
      process.stdout.write(`Authorized ${added.name} (${added.fingerprint}) with scope ${added.scope}\n`);
      return;
    }
    case "scope": {
      const changed = setScope(home, name, parseScope(publicKey));
      if (options.json) return printJson(changed);
      process.stdout.write(`${changed.name} now has scope ${changed.scope}\n`);
      return;
    }
    case "list": {
      const keys = listKeys(home);
      if (options.json) return printJson({ keys });
      process.stdout.write(
        `${table([["NAME", "FINGERPRINT", "SCOPE"], ...keys.map((k) => [k.name, k.fingerprint, k.scope])])}\n`,
      );
      return;
    }
    case "remove": {
      const undo = `spar key add ${CLI_KEY_ID} ${cliPublicKeyPath(home)}`;
      const own = name === CLI_KEY_ID;
      if (own && !options.force) {
        throw new SparError(
          "CONFLICT",
          `"${CLI_KEY_ID}" is the key this CLI signs its requests with: without it the daemon refuses them ` +
            '("unknown key id"), and spar keeps working only by sending them unsigned, which the daemon ' +
            "accepts from this machine while [auth] allow_unsigned_loopback is on. To remove it anyway: " +
            `spar key remove ${CLI_KEY_ID} --force (undo with: ${undo})`,
        );
      }
      removeKey(home, name);
      if (options.json) return printJson({ removed: name });
      process.stdout.write(
        own
          ? `Removed ${name}. The daemon no longer knows the CLI's key: spar falls back to unsigned requests, ` +
              `which work only on this machine while [auth] allow_unsigned_loopback is on. Undo with: ${undo}\n`
          : `Removed ${name}\n`,
      );
      return;
    }
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for key`);
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
    const text = Buffer.concat(chunks).toString("utf8");
    if (text.trim() === "") throw new SparError("VALIDATION_FAILED", "no public key on standard input");
    return text;
  }
  return existsSync(argument) ? readFileSync(argument, "utf8") : argument;
}
