import {
  definePlugin,
  type MoveHandler,
  type SparConfig,
  SparError,
  type TaintSource,
} from "../../sdk/index.js";
import { createSandbox, egressOf, type Sandbox } from "../../sdk/kits/sandbox.js";
import { commandFolder } from "./cwd.js";
import { policyOf, refusal } from "./patterns.js";
import { maskSecrets, secretValues } from "./secrets.js";
import type { ShellSettings } from "./settings.js";

/** What `command` runs through: the move checks `[SHELL, "-c", command]` against the grant like any argv. */
const SHELL = "/bin/sh";

/**
 * `shell_exec {argv | command, stdin?, cwd?, timeout_s?}`: one program in the fighter's workspace,
 * allowed by a grant's pattern (patterns.ts), run in the sandbox (lib/sandbox: bubblewrap, limits,
 * network only through the egress proxy and only with a `network` grant), with no shell and a
 * cleared environment, stopped by its timeout or the call's signal together with everything it
 * started, its output capped and the daemon's secrets masked in it (secrets.ts). The skills the
 * fighter may use that hold scripts are there read-only at `/skills/<name>` (`move.mounts`).
 */
export default definePlugin<{ "moves.shell": ShellSettings }>({
  id: "moves-shell",
  apply({ hooks, config, home, env, ring }, sections) {
    const settings = sections["moves.shell"];
    const keyNames = configuredKeyNames(config);
    let sandbox: Sandbox | undefined;

    const shellExec: MoveHandler = {
      name: "shell_exec",
      async run(input, { grants, callers, workspace, signal, fighter, untrusted }) {
        const argv = commandOf(input);
        const denied = [grants, ...callers.map((c) => c.grants)]
          .map((g) => refusal(policyOf(g), argv, input.command !== undefined))
          .find(Boolean);
        if (denied) throw new SparError("CAPABILITY_DENIED", denied);
        const cwd = commandFolder(workspace, optionalString(input.cwd, "cwd"));
        const limit = settings.timeout_s;
        const asked = typeof input.timeout_s === "number" ? input.timeout_s : limit;
        const secrets = secretValues(env, keyNames);
        // Network as far as this fighter and every fighter that asked for this turn allow it.
        const network = egressOf([
          fighter.manifest.capabilities ?? [],
          ...callers.map((c) => c.capabilities),
        ]);
        sandbox ??= createSandbox(config.sandbox, home, env);
        // The folders of the skills this fighter may use that hold scripts, read-only (/skills/<name>).
        const mounts = await ring.moves.mounts(fighter);
        // With the network, what the command prints (and leaves) may come from anywhere it reached.
        if (network) untrusted(shellTaint(network));
        return sandbox.run({
          argv,
          workspace: commandFolder(workspace),
          cwd,
          path: settings.path,
          env: { LANG: "C.UTF-8" },
          ...(typeof input.stdin === "string" ? { stdin: input.stdin } : {}),
          timeoutMs: Math.min(asked, limit) * 1000,
          maxOutputBytes: settings.max_output_bytes,
          signal,
          transform: (text, cut) => maskSecrets(text, secrets, cut),
          ...(network ? { network } : {}),
          ...(mounts.length ? { mounts } : {}),
        });
      },
    };
    hooks.move.resolve.tap((name) => (name === shellExec.name ? shellExec : undefined));
  },
});

/**
 * What a command run with network access taints the turn with: the hosts its grants let it reach
 * (a host had to be on every list), or any public host. Without network a command reads only the
 * workspace and the read-only system, so its output taints nothing by itself (README: a file another
 * program left in the workspace is untrusted only when `file_read` reads it).
 */
export function shellTaint(network: NonNullable<ReturnType<typeof egressOf>>): TaintSource {
  const lists = (network.hostSets ?? []).map((set) => set.listed.join(", ") || "none");
  const hosts = lists.length === 0 ? "any public host" : lists.join(" and also on ");
  return { kind: "web", detail: `shell with network: ${hosts}`, move: "shell_exec" };
}

/** The argv to run: `argv` as given, or `command` as `/bin/sh -c <command>`; exactly one of them. */
function commandOf(input: Record<string, unknown>): string[] {
  const { argv, command } = input;
  if ((argv === undefined) === (command === undefined)) {
    throw new SparError(
      "VALIDATION_FAILED",
      "shell_exec needs exactly one of argv (the program and its arguments) and command (a line for /bin/sh -c)",
    );
  }
  const list = Array.isArray(argv) ? argv.map(String) : [SHELL, "-c", String(command)];
  if (list[0] === "") throw new SparError("VALIDATION_FAILED", "argv[0], the program, is empty");
  if (list.some((arg) => arg.includes("\0"))) {
    throw new SparError("VALIDATION_FAILED", "arguments cannot contain the NUL character");
  }
  return list;
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (text.includes("\0")) throw new SparError("VALIDATION_FAILED", `${name} cannot contain NUL`);
  return text;
}

/** Variables the config names as holding provider keys, whatever they are called. */
function configuredKeyNames(config: Readonly<SparConfig>): Set<string> {
  const routing = config.model_routing;
  return new Set(
    [
      config.default_model.api_key_env,
      routing.cheap?.api_key_env,
      routing.mid?.api_key_env,
      routing.expensive?.api_key_env,
      ...config.providers.endpoints.map((e) => e.api_key_env),
    ].filter((name): name is string => typeof name === "string"),
  );
}
