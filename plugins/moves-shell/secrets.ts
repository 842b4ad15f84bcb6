/**
 * A mask for the daemon's own secrets in command output. Commands never get the daemon's
 * environment, but they run as the daemon's user, so one can still read it from
 * `/proc/<daemon pid>/environ` or `ps eww`. Values of variables that hold secrets are replaced in
 * stdout and stderr before the model sees them. This catches accidents (a `ps eww` while debugging),
 * not a determined command: anything encoded (`base64`, `rev`) passes. The boundary is the grant's
 * pattern (see README.md).
 */

/** Names of variables whose values are secrets: provider keys, Spar's master key, tokens, passwords. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|COOKIE/i;
/** Shorter values are left alone: masking them would mangle ordinary output. */
const MIN_SECRET_CHARS = 8;
/** At a cut, an ending this long that begins a secret is masked too. */
const MIN_PREFIX_CHARS = 4;
export const MASK = "[secret]";

/** The secret values in `env`: by name, plus the variables `keyNames` lists (config's api_key_env). */
export function secretValues(env: NodeJS.ProcessEnv, keyNames: ReadonlySet<string>): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= MIN_SECRET_CHARS && (SECRET_NAME.test(name) || keyNames.has(name)))
      values.add(value);
  }
  // Longest first, so a secret that contains another is masked whole.
  return [...values].sort((a, b) => b.length - a.length);
}

/**
 * `text` with every secret replaced by [secret]. When the text was cut (`cut`), an ending that is
 * the start of a secret is masked too, so a cut never shows the first half of a key.
 */
export function maskSecrets(text: string, secrets: readonly string[], cut = false): string {
  let masked = text;
  for (const secret of secrets) {
    if (masked.includes(secret)) masked = masked.split(secret).join(MASK);
  }
  if (!cut) return masked;
  for (const secret of secrets) {
    for (let n = Math.min(secret.length - 1, masked.length); n >= MIN_PREFIX_CHARS; n--) {
      if (masked.endsWith(secret.slice(0, n))) return `${masked.slice(0, -n)}${MASK}`;
    }
  }
  return masked;
}
