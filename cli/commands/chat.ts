import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { SparError } from "../../sdk/errors.js";
import type { ApprovalNotice, FighterMessageResult } from "../../sdk/services.js";
import { apiStream } from "../client.js";
import { type GlobalOptions, printable, printJson } from "../output.js";

/**
 * `spar chat`: the reply streams to the terminal as the model writes it, with a spinner on stderr
 * until the first token (only on a terminal). `--json` prints the final response body instead.
 * Control characters in the model's text are shown, not obeyed, unless `--raw`. A message continues
 * the fighter's latest bout, unless `--new` starts one or `--bout <id>` picks one. The message is the
 * argument, or standard input (`-`, or no argument when stdin is not a terminal), or `--file <path>`:
 * a long message never meets the command line's length limit.
 */
export async function chat(
  argument: string | undefined,
  options: GlobalOptions & { fighter: string; bout?: string; new?: boolean; raw?: boolean; file?: string },
): Promise<void> {
  if (options.new && options.bout) {
    throw new SparError("VALIDATION_FAILED", "use --new (a new bout) or --bout <id> (that bout), not both");
  }
  const text = await messageText(argument, options.file);
  const show = options.raw ? (t: string) => t : printable;
  const path = `/api/v1/fighters/${encodeURIComponent(options.fighter)}/message`;
  // Without either, the daemon continues the fighter's latest bout.
  const bout = options.new ? { bout: "new" } : options.bout ? { bout_id: options.bout } : {};
  const body = { message: text, ...bout };
  const spinner = options.json ? undefined : startSpinner();
  // Ctrl-C closes the request, and the daemon cancels the turn (no tokens are spent after it).
  const abort = new AbortController();
  const onInterrupt = () => abort.abort();
  process.once("SIGINT", onInterrupt);
  // A retry of this exact request (a dropped connection, a proxy) never runs the turn twice.
  const headers = { "idempotency-key": randomUUID() };
  let printed = false;
  const lost = () => {
    if (printed) process.stdout.write("\n");
    return interrupted(options.fighter, options.bout);
  };
  try {
    for await (const { event, data } of apiStream("POST", path, body, {
      headers,
      signal: abort.signal,
      lost,
    })) {
      if (event === "delta") {
        spinner?.stop();
        if (!options.json) process.stdout.write(show((data as { text: string }).text));
        printed = true;
      } else if (event === "approval") {
        // A call waits for an answer: said on stderr, with how to give it (from another terminal).
        spinner?.stop();
        const approval = data as ApprovalNotice;
        process.stderr.write(
          `${printed ? "\n" : ""}[waiting for approval: ${approval.move} ${printable(approval.subject)} (until ${approval.expires_at}); answer with: spar approvals approve ${approval.id}  |  spar approvals deny ${approval.id}]\n`,
        );
      } else if (event === "reply") {
        spinner?.stop();
        const result = data as FighterMessageResult;
        if (options.json) return printJson(result);
        // A reply with no streamed text (e.g. a stopped loop) is printed whole.
        process.stdout.write(printed ? "\n" : `${show(result.response)}\n`);
        return;
      } else if (event === "error") {
        const error = (data as { error: { code: string; message: string } }).error;
        if (printed) process.stdout.write("\n");
        throw new SparError(error.code as SparError["code"], error.message);
      }
    }
    throw new SparError("INTERNAL", "the reply stream ended without a reply");
  } catch (err) {
    if (!abort.signal.aborted) throw err;
    spinner?.stop();
    if (printed) process.stdout.write("\n");
    // 130, as for any program stopped by Ctrl-C; the error itself is reported as usual.
    process.exitCode = 130;
    throw new SparError("CANCELLED", "cancelled; the fighter stopped this turn");
  } finally {
    process.off("SIGINT", onInterrupt);
    spinner?.stop();
  }
}

/**
 * The message to send: `--file`'s contents, standard input for `-` (or for no argument when stdin is
 * a pipe or a file), else the argument itself. Refused before anything is sent when it is empty or
 * given twice, or when there is none at all on a terminal.
 */
async function messageText(argument: string | undefined, file: string | undefined): Promise<string> {
  if (file !== undefined && argument !== undefined) {
    throw new SparError(
      "VALIDATION_FAILED",
      "give the message as text, - (stdin) or --file <path>, not two of them",
    );
  }
  let text: string;
  let from: string;
  if (file !== undefined) {
    text = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
      throw new SparError("VALIDATION_FAILED", `--file ${file} cannot be read (${err.code ?? err.message})`);
    });
    from = `--file ${file}`;
  } else if (argument === "-" || (argument === undefined && !process.stdin.isTTY)) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString("utf8");
    from = "standard input";
  } else if (argument === undefined) {
    throw new SparError(
      "VALIDATION_FAILED",
      'chat needs a message: spar chat "<text>", spar chat - (reads stdin) or spar chat --file <path>',
    );
  } else {
    return argument;
  }
  if (text.trim() === "") throw new SparError("VALIDATION_FAILED", `the message from ${from} is empty`);
  return text;
}

/**
 * The daemon went away with the turn in hand (a crash, kill -9): the message was stored before the
 * model was asked, and the next start records the turn as interrupted (INTERRUPTED), so say where
 * to find both rather than that Spar is not running.
 */
function interrupted(fighter: string, bout: string | undefined): SparError {
  const list = `spar bout list${fighter === "spar" ? "" : ` --fighter ${fighter}`}`;
  const see = bout ? `spar bout show ${bout}` : `${list} (this bout is the first), then spar bout show <id>`;
  return new SparError(
    "INTERRUPTED",
    `Spar stopped during this turn (its connection closed before the reply): your message was saved and ` +
      `the turn interrupted. Once Spar runs again (spar start), see them with: ${see}`,
  );
}

function startSpinner(): { stop(): void } | undefined {
  if (!process.stderr.isTTY) return undefined;
  const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
  let i = 0;
  const timer = setInterval(() => {
    process.stderr.write(`\r${frames[i++ % frames.length]} thinking…`);
  }, 80);
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      process.stderr.write("\r\x1b[2K");
    },
  };
}
