import { describe, expect, it } from "vitest";
import { collectOutput, wholeCharacters } from "../../lib/sandbox/output.js";
import { MASK, maskSecrets, secretValues } from "./secrets.js";

describe("secretValues", () => {
  it("takes the values of variables named like secrets, and of the variables the config names", () => {
    const env = {
      OPENAI_API_KEY: "sk-openai-123456",
      SPAR_MASTER_KEY: "a".repeat(64),
      GITHUB_TOKEN: "ghp_abcdefgh",
      DB_PASSWORD: "hunter2hunter2",
      MY_LLM: "custom-key-value",
      SPAR_HOME: "/home/someone/.spar",
      PATH: "/usr/bin:/bin",
      SHORT_KEY: "abc",
    };
    expect(secretValues(env, new Set(["MY_LLM"])).sort()).toEqual(
      ["sk-openai-123456", "a".repeat(64), "ghp_abcdefgh", "hunter2hunter2", "custom-key-value"].sort(),
    );
  });
});

describe("maskSecrets", () => {
  const secrets = ["sk-openai-123456", "ghp_abcdefgh"];

  it("replaces every occurrence", () => {
    expect(maskSecrets("OPENAI_API_KEY=sk-openai-123456\0X=sk-openai-123456 ghp_abcdefgh", secrets)).toBe(
      `OPENAI_API_KEY=${MASK}\0X=${MASK} ${MASK}`,
    );
  });

  it("masks the start of a secret at the end of a cut text, and only there", () => {
    expect(maskSecrets("key: sk-open", secrets, true)).toBe(`key: ${MASK}`);
    expect(maskSecrets("key: sk-open", secrets, false)).toBe("key: sk-open");
    expect(maskSecrets("ends in sk-", secrets, true)).toBe("ends in sk-");
  });

  it("masks a longer secret whole when it contains a shorter one", () => {
    const nested = secretValues({ A_KEY: "inner-secret", B_KEY: "outer-inner-secret-x" }, new Set());
    expect(maskSecrets("outer-inner-secret-x", nested)).toBe(MASK);
  });
});

describe("collectOutput", () => {
  it("keeps both streams up to one limit, in arrival order, and marks what it cut", () => {
    const output = collectOutput(10);
    output.add("stdout", Buffer.from("123456"));
    output.add("stderr", Buffer.from("abcdef"));
    output.add("stdout", Buffer.from("789"));
    const result = output.finish();
    expect(result.truncated).toBe(true);
    expect(result.stdout).toBe(
      "123456\n[cut: 3 more bytes of stdout not shown (the limit is 10 bytes of output per command); the command was stopped there; filter its output, or write it to a file and read that in parts]",
    );
    expect(result.stderr.startsWith("abcd\n[cut: 2 more bytes of stderr")).toBe(true);
  });

  it("leaves output under the limit whole and unmarked", () => {
    const output = collectOutput(10);
    output.add("stdout", Buffer.from("hello"));
    expect(output.finish()).toEqual({ stdout: "hello", stderr: "", truncated: false });
  });

  it("cuts on a whole UTF-8 character", () => {
    const output = collectOutput(5);
    output.add("stdout", Buffer.from("ééé"));
    expect(output.finish().stdout.startsWith("éé\n[cut: 2 more bytes")).toBe(true);
    expect(wholeCharacters(Buffer.from("a😀").subarray(0, 4)).toString()).toBe("a");
    expect(wholeCharacters(Buffer.from("a😀")).toString()).toBe("a😀");
  });

  it("hands the transform each stream's kept text, saying whether it was cut", () => {
    const output = collectOutput(8);
    output.add("stdout", Buffer.from("key=sk-openai-123456"));
    const result = output.finish((text, cut) => maskSecrets(text, ["sk-openai-123456"], cut));
    expect(result.stdout.startsWith(`key=${MASK}\n[cut:`)).toBe(true);
  });
});
