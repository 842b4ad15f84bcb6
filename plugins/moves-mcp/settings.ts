import { resolve } from "node:path";
import { SparError } from "../../sdk/index.js";

/** One `[mcp.servers.<name>]` table as plugin.json's schema lets it through. */
export interface ServerTable {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  pass_env?: string[];
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  tools?: string[];
  trusted?: boolean;
}

/** The `[mcp]` table, defaults filled in. */
export interface McpSettings {
  start_timeout_s: number;
  servers: Record<string, ServerTable>;
}

interface SpecBase {
  name: string;
  /** Offer only these tools (the server's own names); all when absent. */
  tools?: readonly string[];
  /**
   * The operator vouches for what its tools return (`trusted = true`): their results do not taint
   * the turn. By default a server's results are untrusted content (mail, web pages, tickets anyone
   * can write), and a turn that read one asks before its side effects.
   */
  trusted?: true;
}

/** A server run as a child process, spoken to over its stdin and stdout. */
export interface StdioSpec extends SpecBase {
  transport: "stdio";
  command: string;
  args: readonly string[];
  /**
   * The server's whole environment: INHERITED_ENV and the `pass_env` variables from the daemon's,
   * then the config's `env`. Nothing else of the daemon's is added.
   */
  env: Readonly<Record<string, string>>;
  /** The variables `pass_env` names (their values are treated as secrets). */
  pass_env: readonly string[];
  /** Those of them the daemon's environment does not have: the server is not started without them. */
  missing_env: readonly string[];
  cwd: string;
}

/** A server reached over streamable HTTP. */
export interface HttpSpec extends SpecBase {
  transport: "http";
  url: string;
  headers: Readonly<Record<string, string>>;
}

export type ServerSpec = StdioSpec | HttpSpec;

const STDIO_ONLY = ["command", "args", "env", "pass_env", "cwd"] as const;

/**
 * What every stdio server gets from the daemon's environment without being named: where programs
 * and the user's files are, who the user is, and the locale. A server started through `npx` or a
 * `#!/usr/bin/env node` script cannot start without PATH and HOME; none of these holds a credential.
 * Everything else (provider keys, SPAR_* variables, the master key, tokens) stays out unless the
 * server's `pass_env` names it.
 */
export const INHERITED_ENV = [
  "HOME",
  "LANG",
  "LC_ALL",
  "LOGNAME",
  "PATH",
  "SHELL",
  "TERM",
  "TMPDIR",
  "TZ",
  "USER",
];
const HTTP_ONLY = ["url", "headers"] as const;

/**
 * The servers of the `[mcp]` table. The schema has checked names and types; this checks what a
 * schema says badly: each server has exactly one transport (`command` for stdio or `url` for
 * streamable HTTP) and only that transport's keys, and that no variable is both in `env` and in
 * `pass_env`. A relative `cwd` is taken from the data dir, which is also the default working
 * directory. A stdio server's environment is built here from `daemonEnv`, the daemon's (PluginApi.env,
 * which holds `.env`'s variables too): INHERITED_ENV, `pass_env` and `env`, nothing else.
 */
export function serverSpecs(
  settings: McpSettings,
  home: string,
  file: string,
  daemonEnv: NodeJS.ProcessEnv,
): ServerSpec[] {
  return Object.entries(settings.servers).map(([name, table]) => {
    const where = `${file}: [mcp.servers.${name}]`;
    const refuse = (message: string): never => {
      throw new SparError("CONFIG_INVALID", `${where} ${message}`, { path: `mcp.servers.${name}` });
    };
    const given = (keys: readonly (keyof ServerTable)[]) => keys.filter((k) => table[k] !== undefined);
    const tools = {
      ...(table.tools ? { tools: table.tools } : {}),
      ...(table.trusted ? { trusted: true as const } : {}),
    };
    if (table.command !== undefined && table.url !== undefined) {
      refuse(
        'has both "command" and "url"; give one: command (a program spoken to over stdio) or url (streamable HTTP)',
      );
    }
    if (table.command !== undefined) {
      const stray = given(HTTP_ONLY);
      if (stray.length > 0) refuse(`runs a command, so "${stray.join('", "')}" (for url servers) has no use`);
      const passEnv = table.pass_env ?? [];
      const both = passEnv.filter((variable) => table.env?.[variable] !== undefined);
      if (both.length > 0) {
        refuse(
          `names ${both.join(", ")} in both "env" (a value) and "pass_env" (the daemon's value); keep one`,
        );
      }
      return {
        name,
        transport: "stdio",
        command: table.command,
        args: table.args ?? [],
        env: { ...picked(daemonEnv, INHERITED_ENV), ...picked(daemonEnv, passEnv), ...table.env },
        pass_env: passEnv,
        missing_env: passEnv.filter((variable) => daemonEnv[variable] === undefined),
        cwd: resolve(home, table.cwd ?? "."),
        ...tools,
      };
    }
    if (table.url !== undefined) {
      const stray = given(STDIO_ONLY);
      if (stray.length > 0) refuse(`has a url, so "${stray.join('", "')}" (for command servers) has no use`);
      const parsed = URL.parse(table.url);
      if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
        refuse('"url" is not an http:// or https:// URL');
      return { name, transport: "http", url: table.url, headers: table.headers ?? {}, ...tools };
    }
    return refuse(
      'needs "command" (a program spoken to over stdio, with "args" and "env") or "url" (streamable HTTP, with "headers")',
    );
  });
}

/** The variables of `env` among `names` that it has. */
function picked(env: NodeJS.ProcessEnv, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** How a server is shown to people: the command without its arguments, or the URL without credentials or query. */
export function describeServer(spec: ServerSpec): string {
  if (spec.transport === "stdio") return `stdio: ${spec.command}`;
  const url = URL.parse(spec.url);
  return `http: ${url ? `${url.origin}${url.pathname}` : "(invalid url)"}`;
}

/** Variable names that say their value is a credential. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASS|AUTH|CRED|COOKIE|SESSION|PRIVATE/i;

/**
 * Values that must not leave the plugin in a message or a tool result: those of environment
 * variables and headers whose names say they are credentials (`*_TOKEN`, `*_KEY`, `*PASSWORD*`,
 * `Authorization`, `Cookie`, `X-Api-Key` …; a "Bearer <token>" value's token too), of every
 * variable `pass_env` brings from the daemon's environment, whatever its name, and the URL's user,
 * password and query values. Values under 4 characters are left alone: hiding "1" everywhere would
 * garble text and protect nothing.
 */
export function secretsOf(spec: ServerSpec): string[] {
  const named = (table: Readonly<Record<string, string>>, always: readonly string[] = []) =>
    Object.entries(table)
      .filter(([name]) => SECRET_NAME.test(name) || always.includes(name))
      .flatMap(([, value]) => credentialsIn(value));
  const values =
    spec.transport === "stdio"
      ? named(spec.env, spec.pass_env)
      : [...named(spec.headers), ...urlSecrets(spec.url)];
  return [...new Set(values.filter((v) => v.length >= 4))].sort((a, b) => b.length - a.length);
}

/** A value, and its credential alone when it has a scheme ("Bearer <token>"). */
function credentialsIn(value: string): string[] {
  const credential = /^[A-Za-z][\w-]*\s+(\S+)$/.exec(value.trim())?.[1];
  return credential ? [value, credential] : [value];
}

function urlSecrets(url: string): string[] {
  const parsed = URL.parse(url);
  if (!parsed) return [];
  const decoded = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  return [parsed.username, parsed.password, decoded(parsed.username), decoded(parsed.password)]
    .concat([...parsed.searchParams.values()])
    .filter(Boolean);
}

/** `text` with every secret replaced by "[redacted]". */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join("[redacted]");
  return out;
}
