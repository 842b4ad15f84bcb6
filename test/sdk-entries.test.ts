/**
 * The package's SDK entries as a third party's plugin meets them: every `spar/sdk/<kit>` in
 * package.json's exports is a module of sdk/kits/ (and every module there is published); each entry
 * resolves by its name from the built package (dist/, so `npm run build` first), typed there; and
 * every export of a kit carries a doc comment in those types.
 */
import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");

interface Target {
  types: string;
  default: string;
}

const exportsMap = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    exports: Record<string, Target | string>;
  }
).exports;
const entries = Object.keys(exportsMap).filter((key) => key === "./sdk" || key.startsWith("./sdk/"));
const kits = entries.filter((key) => key !== "./sdk").map((key) => key.slice("./sdk/".length));
const specifier = (entry: string) => `spar${entry.slice(1)}`;

describe("spar/sdk entries", () => {
  // A consumer outside the repository with spar installed, as npm would link it.
  let consumer: string;
  beforeAll(() => {
    consumer = mkdtempSync(join(tmpdir(), "spar-sdk-consumer-"));
    mkdirSync(join(consumer, "node_modules"));
    symlinkSync(ROOT, join(consumer, "node_modules", "spar"), "dir");
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ type: "module", private: true }));
  });
  afterAll(() => rmSync(consumer, { recursive: true, force: true }));

  it("publishes exactly the kits of sdk/kits/, each with its types beside its code", () => {
    const files = readdirSync(join(ROOT, "sdk", "kits"))
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .map((f) => f.slice(0, -".ts".length));
    expect(kits.sort()).toEqual(files.sort());
    for (const kit of kits) {
      expect(exportsMap[`./sdk/${kit}`]).toEqual({
        types: `./dist/sdk/kits/${kit}.d.ts`,
        default: `./dist/sdk/kits/${kit}.js`,
      });
    }
  });

  /** The probe's imports, one per entry, typed by a program that sees only what a consumer sees. */
  function typedEntries(): {
    checker: ts.TypeChecker;
    modules: (ts.Symbol | undefined)[];
    problems: string[];
  } {
    const probe = entries.map((e, i) => `import * as m${i} from "${specifier(e)}";`).join("\n");
    writeFileSync(
      join(consumer, "probe.ts"),
      `${probe}\nexport { ${entries.map((_, i) => `m${i}`).join(", ")} };\n`,
    );
    writeFileSync(
      join(consumer, "probe.mjs"),
      `${probe}\nconsole.log(JSON.stringify([${entries.map((_, i) => `Object.keys(m${i})`).join(", ")}]));\n`,
    );
    const program = ts.createProgram([join(consumer, "probe.ts")], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
      typeRoots: [join(ROOT, "node_modules", "@types")],
    });
    const file = program.getSourceFile(join(consumer, "probe.ts"));
    const checker = program.getTypeChecker();
    return {
      checker,
      modules: (file?.statements.filter(ts.isImportDeclaration) ?? []).map((d) =>
        checker.getSymbolAtLocation(d.moduleSpecifier),
      ),
      problems: ts
        .getPreEmitDiagnostics(program, file)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")),
    };
  }

  it("resolves every entry by name from the built package, typed, its values the module's", () => {
    const { checker, modules, problems } = typedEntries();
    expect(problems).toEqual([]);
    const runtime = JSON.parse(
      execFileSync(process.execPath, ["probe.mjs"], { cwd: consumer, encoding: "utf8" }),
    ) as string[][];
    expect(modules).toHaveLength(entries.length);
    entries.forEach((entry, i) => {
      const module = modules[i];
      expect(module, `${specifier(entry)} has no types`).toBeDefined();
      const typedValues = checker
        .getExportsOfModule(module as ts.Symbol)
        .filter((s) => resolved(checker, s).flags & ts.SymbolFlags.Value)
        .map((s) => s.name);
      expect(runtime[i]?.length, `${specifier(entry)} exports nothing`).toBeGreaterThan(0);
      expect(typedValues.sort(), specifier(entry)).toEqual([...(runtime[i] ?? [])].sort());
    });

    // Every export of a kit carries a doc comment, as its users' editors show it.
    const undocumented = entries.flatMap((entry, i) =>
      entry === "./sdk"
        ? []
        : checker
            .getExportsOfModule(modules[i] as ts.Symbol)
            .filter(
              (s) => ts.displayPartsToString(resolved(checker, s).getDocumentationComment(checker)) === "",
            )
            .map((s) => `${specifier(entry)}: ${s.name}`),
    );
    expect(undocumented).toEqual([]);
  });
});

function resolved(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}
