import { describe, expect, it } from "vitest";
import type { ApprovalAnswerer, Logger } from "../../sdk/index.js";
import {
  approvalAction,
  approvalPrompt,
  approvalText,
  CALLBACK_DATA_MAX,
  createApprovalDesk,
  endedText,
  maskSecrets,
  NOT_ALLOWED,
  PROMPT_SUBJECT_MAX,
  readApprovalAction,
  withOutcome,
} from "./approvals.js";

const ID = "0b6f3c1e-8f3a-4d52-9a0e-6c1d2b3a4f5e";
const request = (over: Record<string, unknown> = {}) => ({
  id: ID,
  fighter: "coder",
  move: "shell_exec",
  subject: "/bin/sh -c echo ran >> ran.txt",
  why: "shell_exec runs a program (the default: ask)",
  expires_at: "2025-03-04T05:06:07.000Z",
  ...over,
});

describe("the buttons' payload", () => {
  it("fits Telegram's 64 bytes for a request id, and reads back", () => {
    for (const approve of [true, false]) {
      const data = approvalAction(approve, ID);
      expect(Buffer.byteLength(data)).toBeLessThanOrEqual(CALLBACK_DATA_MAX);
      expect(readApprovalAction(data)).toEqual({ approve, request_id: ID });
    }
    expect(approvalAction(true, ID)).toBe(`spar:a:${ID}`);
  });

  it("refuses an id that would not fit or is not plain", () => {
    expect(() => approvalAction(true, "x".repeat(58))).toThrow(/short and plain/);
    expect(() => approvalAction(true, "a b")).toThrow(/short and plain/);
    expect(approvalAction(true, "x".repeat(57))).toHaveLength(64);
  });

  it("reads nothing from a payload that is not ours", () => {
    for (const data of [
      undefined,
      7,
      "",
      "spar:x:1",
      "spar:a:",
      "other:a:1",
      `spar:a:${ID} `,
      `spar:a:${"x".repeat(58)}`,
    ]) {
      expect(readApprovalAction(data)).toBeUndefined();
    }
  });
});

describe("the prompt", () => {
  it("says who wants to run what, why, the taint, the expiry and the request", () => {
    const prompt = approvalPrompt(
      request({ taint: [{ kind: "web", detail: "https://evil.example/planted", move: "web_fetch" }] }),
    );
    expect(approvalText(prompt, 4096).split("\n")).toEqual([
      "Approval needed: coder wants to run shell_exec",
      "/bin/sh -c echo ran >> ran.txt",
      "Why: shell_exec runs a program (the default: ask)",
      "Read before asking: web https://evil.example/planted",
      "Expires: 2025-03-04 05:06 UTC (then it is denied)",
      `Request: ${ID}`,
    ]);
  });

  it("shortens a long subject and stays within every platform's limit", () => {
    const prompt = approvalPrompt(request({ subject: `echo ${"a".repeat(10_000)}`, why: "w".repeat(5_000) }));
    expect([...prompt.subject]).toHaveLength(PROMPT_SUBJECT_MAX);
    expect(prompt.subject.endsWith("…")).toBe(true);
    for (const limit of [2000, 3000, 4096]) {
      expect(approvalText(prompt, limit).length).toBeLessThanOrEqual(limit);
      const ended = endedText(prompt, "Approved by channel:telegram:1.", limit);
      expect(ended.length).toBeLessThanOrEqual(limit);
      expect(ended.endsWith("\n\nApproved by channel:telegram:1.")).toBe(true);
    }
    expect(approvalText(prompt, 100).length).toBeLessThanOrEqual(100);
    expect(withOutcome("x".repeat(5000), "Denied.", 2000)).toHaveLength(2000);
  });

  it("never cuts a surrogate pair in half", () => {
    const prompt = approvalPrompt(request({ subject: "😀".repeat(400) }));
    expect(prompt.subject).toBe(`${"😀".repeat(PROMPT_SUBJECT_MAX - 1)}…`);
  });

  it("masks what looks like a secret in the subject and the reason", () => {
    const prompt = approvalPrompt(
      request({
        subject:
          'curl -H "Authorization: Bearer abcdefghijklmnop" https://bob:hunter22@example.com/?x=1 --password s3cret DB_PASSWORD=pw1 api_key: k3y sk-ant-0123456789abcdefghij',
      }),
    );
    for (const secret of [
      "abcdefghijklmnop",
      "hunter22",
      "s3cret",
      "pw1",
      "k3y",
      "sk-ant-0123456789abcdefghij",
    ]) {
      expect(prompt.subject).not.toContain(secret);
    }
    expect(prompt.subject).toContain("https://***@example.com");
    expect(maskSecrets("echo the author wrote it")).toBe("echo the author wrote it");
    expect(maskSecrets("xoxb-123-456-abcdefABCDEF and 123456789:AAH0123456789abcdefghijklmnopqrstuv")).toBe(
      "*** and ***",
    );
    expect(maskSecrets('{"token": "abc"}')).toBe('{"token": ***}');
  });
});

describe("the desk", () => {
  const lines: { message: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = {
    info: () => undefined,
    warn: (message, fields) => lines.push({ message, ...(fields ? { fields } : {}) }),
    error: () => undefined,
  };
  const answered: ApprovalAnswerer = async (press) => ({
    result: "answered",
    status: press.approve ? "approved" : "denied",
    text: "ok",
    outcome: `Approved by channel:${press.platform}:${press.sender}.`,
  });

  it("lets the owners answer; with owners, an allowlisted stranger is refused and logged", async () => {
    const desk = createApprovalDesk({ platform: "telegram", owners: ["1"], allowlist: ["1", "2"], log });
    desk.answerWith(answered);
    expect(await desk.press({ request_id: ID, approve: true, chat: "1", sender: "1" })).toMatchObject({
      result: "answered",
      outcome: "Approved by channel:telegram:1.",
    });
    expect(await desk.press({ request_id: ID, approve: true, chat: "1", sender: "2" })).toEqual({
      result: "refused",
      text: NOT_ALLOWED,
    });
    expect(lines.at(-1)).toEqual({
      message: "approval.refused: a press from someone who may not answer",
      fields: { platform: "telegram", sender: "2", request: ID },
    });
  });

  it("without owners, lets the allowlist answer", async () => {
    const desk = createApprovalDesk({ platform: "slack", owners: [], allowlist: ["U1"], log });
    desk.answerWith(answered);
    expect(desk.mayAnswer("U1")).toBe(true);
    expect(desk.mayAnswer("U2")).toBe(false);
    expect((await desk.press({ request_id: ID, approve: false, chat: "C1", sender: "U1" })).result).toBe(
      "answered",
    );
  });

  it("says so when nothing answers presses, or the answer fails", async () => {
    const desk = createApprovalDesk({ platform: "discord", owners: ["1"], allowlist: [], log });
    expect((await desk.press({ request_id: ID, approve: true, chat: "c", sender: "1" })).result).toBe(
      "not_found",
    );
    desk.answerWith(async () => {
      throw new Error("store down");
    });
    expect(await desk.press({ request_id: ID, approve: true, chat: "c", sender: "1" })).toMatchObject({
      result: "not_found",
      text: expect.stringContaining("try again"),
    });
  });
});
