/**
 * Commands understood across lines: a download saved to a path and that path run later (`curl -o
 * /tmp/x …` then `bash /tmp/x`, `wget -O installer` then `chmod +x installer && ./installer`), and
 * fetched text kept in a variable and evaluated later (`code = urlopen(u).read()` then `exec(code)`).
 * Both are pipe-to-shell: high, unless a digest or signature check of the file comes between.
 * Reads the code view (continuations joined, look-alikes folded), so offsets map back through it.
 */
import { buildView, type Hit } from "./scan-text.js";

const RULE = "pipe-to-shell";
/** Where a download is saved: curl -o/--output, wget -O/--output-document, > file, -OutFile, urlretrieve. */
const SAVED = [
  /\bcurl\b[^\n]*?\s(?:-[a-z]*o|--output)[=\s]*["']?([^\s"'|;&]+)/i,
  /\bwget\b[^\n]*?\s(?:-[a-z]*O|--output-document)[=\s]*["']?([^\s"'|;&]+)/,
  /\b(?:curl|wget)\b[^\n|]*?>\s*["']?([^\s"'|;&]+)/i,
  /\b(?:invoke-webrequest|iwr|invoke-restmethod|irm)\b[^\n]*?-outfile\s+["']?([^\s"'|;&]+)/i,
  /\burlretrieve\(\s*[^,\n]+,\s*["']([^"'\n]+)["']/i,
  /\baria2c\b[^\n]*?\s-o\s*["']?([^\s"'|;&]+)/i,
];
/** A digest or signature check: the download is verified before it runs. */
const VERIFIED =
  /\bsha(?:1|224|256|384|512)?sum\b|\bshasum\b|\bgpg2?\s+--verify\b|\bcosign\s+verify|\bminisign\b|\bget-filehash\b|\bcertutil\s+-hashfile\b|\bhashlib\.sha\d+|\bchecksum\b/i;
/** Fetched text assigned to a variable (Python, JS, Ruby, PowerShell). */
const FETCHED_VAR =
  /(?:^|[\s;(])(?:(?:const|let|var)\s+)?\$?(\w+)\s*=\s*[^\n=]*?(?:\burlopen\s*\(|\burllib\.request\.\w+\(|\brequests\.(?:get|post)\s*\(|\bhttpx\.(?:get|post)\s*\(|\bfetch\s*\(|\baxios\.get\s*\(|\bhttps?\.get\s*\(|\bnet::http\.get\b|\bopen-uri\b|\binvoke-(?:webrequest|restmethod)\b|\b(?:iwr|irm)\b|\.downloadstring\s*\()/i;
/** `with urlopen(u) as r:` makes r fetched too. */
const FETCHED_WITH = /\bwith\s+(?:urllib\.request\.)?urlopen\([^\n]*\)\s+as\s+(\w+)/i;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The flow hits in `text` (offsets in `text`). */
export function scanFlow(text: string): Hit[] {
  if (
    !/\b(?:curl|wget|invoke-webrequest|iwr|irm|urlretrieve|aria2c|urlopen|requests|httpx|fetch|axios|https?\.get|downloadstring)\b/i.test(
      text,
    )
  )
    return [];
  const view = buildView(text, "code");
  const lines: Array<{ text: string; start: number }> = [];
  let start = 0;
  for (const line of view.text.split("\n")) {
    lines.push({ text: line, start });
    start += line.length + 1;
  }
  const hits: Hit[] = [];
  const at = (line: { start: number }, column: number) => view.origin[line.start + column] ?? 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as { text: string; start: number };
    for (const saved of SAVED) {
      const path = saved.exec(line.text)?.[1];
      if (!path || path === "-" || path.startsWith("/dev/")) continue;
      const base = path.split("/").pop() as string;
      if (base.length === 0) continue;
      const p = `(?:${escapeRegExp(path)}|(?:\\.\\/|[\\w$.{}-]*\\/)${escapeRegExp(base)})`;
      const runs = new RegExp(
        String.raw`(?:\b(?:sudo\s+)?(?:(?:ba|z|k|da)?sh|source|python[0-9.]*|perl|ruby|node|php|pwsh|powershell(?:\s+-file)?|bun|deno\s+run)\s+(?:-\S+\s+)*["']?${p}["']?(?=[\s;&|)]|$)|(?:^|[;&|]\s*|\bthen\s+|\bdo\s+)(?:sudo\s+)?(?:\.\s+)?["']?${p}["']?(?=[\s;&|)]|$)|\bexec\(\s*open\(\s*["']${p}["'])`,
        "i",
      );
      let checked = false;
      for (let j = i; j < Math.min(lines.length, i + 40); j++) {
        const later = lines[j] as { text: string; start: number };
        const rest = j === i ? later.text.slice((saved.exec(later.text)?.index ?? 0) + 1) : later.text;
        if (VERIFIED.test(rest)) {
          checked = true;
          break;
        }
        const run = runs.exec(rest.replace(/^\s*(?:\d+\.\s+|[-*]\s+|\$\s+)?/, ""));
        if (!run) continue;
        const column =
          later.text.length - rest.length + (rest.indexOf(run[0]) === -1 ? 0 : rest.indexOf(run[0]));
        hits.push({
          rule: RULE,
          severity: "high",
          index: at(later, Math.max(0, column)),
          message:
            j === i
              ? `downloads ${path} and runs it without checking its digest`
              : `runs ${path}, downloaded on an earlier line (${j - i} up), without checking its digest`,
        });
        break;
      }
      if (checked) break;
    }
  }
  const fetched = new Set<string>();
  for (const line of lines) {
    const assigned = FETCHED_VAR.exec(line.text)?.[1] ?? FETCHED_WITH.exec(line.text)?.[1];
    if (assigned) {
      fetched.add(assigned);
      continue;
    }
    // One hop: `code = resp.read()` where resp was fetched.
    const hop = /(?:^|[\s;])(\w+)\s*=\s*(?:await\s+)?(\w+)\.(?:read|text|content|json|body)\b/.exec(
      line.text,
    );
    if (hop && fetched.has(hop[2] as string)) fetched.add(hop[1] as string);
    if (fetched.size === 0) continue;
    const call =
      /(?<![\w.])(?:exec|eval|execfile|new\s+function|vm\.runin\w*context|invoke-expression|iex|os\.system|subprocess\.(?:run|call|popen|check_output)|child_process\.exec\w*|execsync)\s*\(?\s*(?:\$)?(\w+)(?:\.(?:decode|text|content|read)\(?\)?)?\s*[,)]?/gi;
    for (const m of line.text.matchAll(call)) {
      if (!fetched.has(m[1] as string)) continue;
      hits.push({
        rule: RULE,
        severity: "high",
        index: at(line, m.index),
        message: `evaluates ${m[1]}, text fetched from the network on an earlier line`,
      });
    }
  }
  return hits;
}
