/**
 * The binary rule of the skill scanner (scan.ts): what a file is by its first bytes. Executables
 * and archives are refused; images, fonts, PDFs, audio and office documents are assets; a script is
 * text, judged by the pattern rules for what it does (a shebang alone is no finding) unless it is
 * named like a document, which is a script in disguise.
 */
import type { Severity } from "./scan-text.js";
import { SKILL_FILE } from "./skill.js";

/** A finding about a whole file (line 1, no excerpt), in scan.ts's shape before deduplication. */
export interface WholeFile {
  rule: string;
  severity: Severity;
  file: string;
  line: number;
  message: string;
  excerpt: string;
  key: string;
}

const whole = (rule: string, severity: Severity, file: string, message: string): WholeFile => ({
  rule,
  severity,
  file,
  line: 1,
  message,
  excerpt: "",
  key: "",
});

/** Compiled programs and installers by name; scripts (.sh, .py, .js, …) are read and judged by what they do. */
const PROGRAM_EXTENSIONS =
  /\.(?:exe|dll|so|dylib|pyc|jar|class|scr|vbs|vbe|wsf|msi|app|bin|com|elf|wasm|apk|deb|rpm)$/i;
/** Names that promise a document: a `#!` at the start of one is a script in disguise. */
const DOCUMENT_EXTENSIONS = /\.(?:md|markdown|mdx|txt|rst|json|ya?ml|toml|csv|tsv|xml|html?|ini|cfg)$/i;

/** Images, fonts, PDFs, audio and office documents (OOXML, ODF) by their first bytes: assets, not programs. */
function mediaKind(bytes: Buffer): string | undefined {
  const ascii = (at: number, text: string) =>
    bytes.subarray(at, at + text.length).toString("latin1") === text;
  if (ascii(0, "\x89PNG")) return "a PNG image";
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "a JPEG image";
  if (ascii(0, "GIF8")) return "a GIF image";
  if (ascii(0, "RIFF") && (ascii(8, "WEBP") || ascii(8, "WAVE"))) return "an image or sound";
  if (ascii(0, "\0\0\x01\0")) return "an icon";
  if (ascii(4, "ftyp")) return "an image or video (ISO media)";
  if (ascii(0, "%PDF-")) return "a PDF";
  if (ascii(0, "ID3") || ascii(0, "OggS") || ascii(0, "fLaC")) return "a sound";
  if (ascii(0, "\0\x01\0\0") || ascii(0, "OTTO") || ascii(0, "wOFF") || ascii(0, "wOF2") || ascii(0, "true"))
    return "a font";
  if (
    ascii(0, "PK\x03\x04") &&
    (bytes.includes(Buffer.from("[Content_Types].xml")) ||
      ascii(30, "mimetypeapplication/vnd.oasis.opendocument"))
  )
    return "an office document";
  return undefined;
}

/** The binary rule for one file; `text` is false when the file must not be read as text. */
export function binaryFindings(file: string, bytes: Buffer): { findings: WholeFile[]; text: boolean } {
  const head = bytes.subarray(0, 8);
  const magic = (sig: number[]) => sig.every((b, i) => head[i] === b);
  const isResource = file !== SKILL_FILE;
  if (isResource && mediaKind(bytes)) return { findings: [], text: false };
  let kind: string | undefined;
  if (magic([0x7f, 0x45, 0x4c, 0x46])) kind = "an ELF executable";
  else if (
    [
      [0xfe, 0xed, 0xfa, 0xce],
      [0xfe, 0xed, 0xfa, 0xcf],
      [0xce, 0xfa, 0xed, 0xfe],
      [0xcf, 0xfa, 0xed, 0xfe],
      [0xca, 0xfe, 0xba, 0xbe],
    ].some(magic)
  )
    kind = "a Mach-O executable";
  else if (magic([0x4d, 0x5a]) && (bytes.includes(0) || bytes.includes(Buffer.from("PE\0\0"))))
    kind = "a Windows (PE) executable";
  else if (magic([0x00, 0x61, 0x73, 0x6d])) kind = "a WebAssembly module";
  else if (
    magic([0x50, 0x4b, 0x03, 0x04]) ||
    magic([0x1f, 0x8b]) ||
    magic([0x37, 0x7a, 0xbc, 0xaf]) ||
    magic([0x52, 0x61, 0x72, 0x21])
  )
    kind = "an archive";
  else if (isResource && magic([0x23, 0x21]) && DOCUMENT_EXTENSIONS.test(file))
    kind = "a script named like a document (it starts with #!)";
  if (kind) {
    const script = kind.startsWith("a script");
    const why = script ? "a script must say what it is" : "a skill holds text, scripts and media only";
    return { findings: [whole("binary", "high", file, `${file} is ${kind}; ${why}`)], text: script };
  }
  const findings: WholeFile[] = [];
  if (bytes.includes(0)) {
    return {
      findings: [whole("binary", "high", file, `${file} holds NUL bytes: binary data, not text`)],
      text: false,
    };
  }
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    findings.push(whole("binary", "high", file, `${file} is not valid UTF-8 text`));
  }
  if (isResource && PROGRAM_EXTENSIONS.test(file)) {
    findings.push(
      whole(
        "binary",
        "medium",
        file,
        `${file} is named like a compiled program; skills carry text and scripts`,
      ),
    );
  }
  return { findings, text: true };
}
