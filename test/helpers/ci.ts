/**
 * For tests only: what CI requires. Under CI (`CI` set and not "false" or "0") a suite whose service
 * is missing fails; it never skips. Outside CI it skips, saying why in its name.
 */

/** Whether the tests run under CI. */
export function underCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== "" && ci !== "false" && ci !== "0";
}

/**
 * The URL of a test service in `variable`, or undefined outside CI when it is unset. Under CI an unset
 * one throws, failing every suite that needs it (scripts/ci-services.sh starts the servers).
 */
export function serviceUrl(variable: "SPAR_TEST_DATABASE_URL" | "SPAR_TEST_REDIS_URL"): string | undefined {
  const url = process.env[variable] || undefined;
  if (url === undefined && underCi()) {
    throw new Error(`CI is set but ${variable} is not: under CI this suite fails rather than skip`);
  }
  return url;
}
