import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/index.js";
import { readSecrets, type TelegramSettings } from "./settings.js";

const SETTINGS: TelegramSettings = {
  token_env: "TG_TOKEN",
  webhook_secret_env: "TG_SECRET",
  allowlist: [42],
  owners: [],
  fighter: "spar",
  api_root: "https://api.telegram.org",
  path: "/telegram",
  rate_per_minute: 20,
};
const TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
const SECRET = "Ab3_-kX9pQ2rT7vW1yZ4";

/** The CONFIG_INVALID error readSecrets throws for `env`. */
function refusal(env: NodeJS.ProcessEnv) {
  try {
    readSecrets(SETTINGS, env);
  } catch (err) {
    if (isSparError(err, "CONFIG_INVALID")) return err;
    throw err;
  }
  throw new Error("expected readSecrets to refuse");
}

describe("channel-telegram secrets", () => {
  it("reads the token and the webhook secret from the variables the table names", () => {
    expect(readSecrets(SETTINGS, { TG_TOKEN: TOKEN, TG_SECRET: SECRET })).toEqual({
      token: TOKEN,
      webhookSecret: SECRET,
    });
  });

  it("refuses to start without the webhook secret, naming the variable and the setup command", () => {
    const err = refusal({ TG_TOKEN: TOKEN });
    expect(err.message).toContain("TG_SECRET is not set");
    expect(err.message).toContain("spar channel setup telegram");
    expect(err.extra).toMatchObject({ variable: "TG_SECRET" });
  });

  it("refuses a secret shorter than 16 or longer than 256 characters", () => {
    expect(refusal({ TG_TOKEN: TOKEN, TG_SECRET: "a".repeat(15) }).message).toContain(
      "16 to 256 characters long, not 15",
    );
    expect(refusal({ TG_TOKEN: TOKEN, TG_SECRET: "a".repeat(257) }).message).toContain("not 257");
    expect(readSecrets(SETTINGS, { TG_TOKEN: TOKEN, TG_SECRET: "a".repeat(256) }).webhookSecret).toHaveLength(
      256,
    );
  });

  it("refuses characters Telegram does not allow in secret_token", () => {
    for (const bad of ["abcdefghijklmnop!", "abcdefgh ijklmnop", "abcdefghijklmnöp", "abcdefgh/ijklmnop"]) {
      expect(refusal({ TG_TOKEN: TOKEN, TG_SECRET: bad }).message).toContain("only letters, digits, _ and -");
    }
  });

  it("refuses a missing or malformed token, naming its variable, never echoing a value", () => {
    expect(refusal({ TG_SECRET: SECRET }).message).toContain("TG_TOKEN is not set");
    const err = refusal({ TG_TOKEN: "123:abc/../x", TG_SECRET: SECRET });
    expect(err.message).toContain("TG_TOKEN does not look like a bot token");
    expect(err.message).not.toContain("abc/../x");
    expect(refusal({ TG_TOKEN: TOKEN, TG_SECRET: "short-secret!" }).message).not.toContain("short-secret");
  });
});
