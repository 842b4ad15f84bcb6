import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/index.js";
import { type DiscordSettings, readSecrets } from "./settings.js";

const SETTINGS: DiscordSettings = {
  token_env: "DISCORD_BOT_TOKEN",
  public_key_env: "DISCORD_PUBLIC_KEY",
  allowlist: [],
  owners: [],
  fighter: "spar",
  api_root: "https://discord.com",
  path: "/discord/interactions",
  rate_per_minute: 20,
};
const KEY = generateKeyPairSync("ed25519")
  .publicKey.export({ format: "der", type: "spki" })
  .subarray(-32)
  .toString("hex");
const TOKEN = "MTA.secret-token-value";

function failure(env: NodeJS.ProcessEnv, settings = SETTINGS) {
  try {
    readSecrets(settings, env);
  } catch (err) {
    if (isSparError(err, "CONFIG_INVALID")) return err;
    throw err;
  }
  throw new Error("accepted");
}

describe("readSecrets", () => {
  it("reads the token and the public key from the variables the settings name", () => {
    const secrets = readSecrets(
      { ...SETTINGS, token_env: "MY_TOKEN", public_key_env: "MY_KEY" },
      { MY_TOKEN: ` ${TOKEN}\n`, MY_KEY: KEY.toUpperCase() },
    );
    expect(secrets.token).toBe(TOKEN);
    expect(secrets.publicKey.asymmetricKeyType).toBe("ed25519");
  });

  it("names the missing variable and the fix, and its config key", () => {
    const noToken = failure({ DISCORD_PUBLIC_KEY: KEY });
    expect(noToken.message).toContain("DISCORD_BOT_TOKEN");
    expect(noToken.message).toContain("spar channel setup discord");
    expect(noToken.extra.path).toBe("channels.discord.token_env");
    const noKey = failure({ DISCORD_BOT_TOKEN: TOKEN, DISCORD_PUBLIC_KEY: "  " });
    expect(noKey.message).toContain("DISCORD_PUBLIC_KEY");
    expect(noKey.extra.path).toBe("channels.discord.public_key_env");
  });

  it("refuses a malformed public key without repeating it or the token", () => {
    const bad = `${KEY.slice(0, 60)}zzzz`;
    const err = failure({ DISCORD_BOT_TOKEN: TOKEN, DISCORD_PUBLIC_KEY: bad });
    expect(err.message).toMatch(/64 hexadecimal/);
    expect(err.message).not.toContain(bad);
    expect(err.message).not.toContain(TOKEN);
  });
});
