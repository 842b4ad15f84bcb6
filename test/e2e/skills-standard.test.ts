import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/** A skill as another agent's author publishes it: the standard's keys, plus one of their own. */
const THIRD_PARTY = `---
name: pdf-forms
description: >-
  Fill in PDF forms and merge PDF files with the bundled script. Use when the user shares a PDF
  form to complete or several PDFs to combine.
license: Apache-2.0
compatibility: Needs Python 3 with pypdf
allowed-tools: Bash(python3:*) Read Task
model: some-model
metadata:
  author: example-org
  version: "2.1"
---

# PDF forms

Read the form's fields first, then fill them one by one.
`;

/** A skill installed before the standard, in Spar's old layout. */
const OLD = `---
name: tidy-notes
description: Tidy a folder of notes into one index. Use when notes are scattered.
version: 1.2.0
category: productivity
tags: [notes, index]
moves: [file_read, file_list]
capabilities: [file_read]
---

# Tidy notes
Read every note, then write the index.
`;

/**
 * The Agent Skills standard as a user meets it: a skill written for another agent installs (its
 * extra key and unknown tool are warnings, its capabilities come from its tools), a skill in Spar's
 * old layout still installs and `spar move doctor` says how to convert it.
 */
describe("skills in the Agent Skills standard", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let sources: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect = false\n");
    daemon = await startDaemon(home, port);
    sources = mkdtempSync(join(tmpdir(), "spar-standard-"));
    for (const [name, text] of [
      ["pdf-forms", THIRD_PARTY],
      ["tidy-notes", OLD],
    ]) {
      mkdirSync(join(sources, name as string));
      writeFileSync(join(sources, name as string, "SKILL.md"), text as string);
    }
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    rmSync(sources, { recursive: true, force: true });
  });

  it("installs a skill written for another agent, warning about what Spar ignores", async () => {
    const installed = await daemon.cli(["move", "install", join(sources, "pdf-forms")]);
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
    expect(installed.stdout).toMatch(
      /LOW\s+invalid-front-matter\s+SKILL\.md:9\s+"model" is not an Agent Skills key/,
    );
    expect(installed.stdout).toMatch(
      /LOW\s+invalid-front-matter\s+SKILL\.md:8\s+Task: no Spar move corresponds/,
    );
    expect(installed.stdout).toMatch(/installed pdf-forms 2\.1 from local:/);
    const listed = await daemon.cli(["move", "list", "--json"]);
    const skill = JSON.parse(listed.stdout).skills.find((s: { name: string }) => s.name === "pdf-forms");
    expect(skill).toMatchObject({
      description:
        "Fill in PDF forms and merge PDF files with the bundled script. Use when the user shares a PDF form to complete or several PDFs to combine.",
      version: "2.1",
      category: "general",
      moves: ["shell_exec", "file_read"],
      capabilities: ["shell_exec", "file_read"],
      source: "installed",
    });
  });

  it("installs a skill in the old layout, and move doctor says how to convert it", async () => {
    const installed = await daemon.cli(["move", "install", join(sources, "tidy-notes")]);
    expect(installed.code).toBe(0);
    expect(installed.stdout).toMatch(/uses Spar's old layout/);
    const doctor = await daemon.cli(["move", "doctor"]);
    expect(doctor.stderr).toBe("");
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain(`INSTALLED   tidy-notes (${join(home, "skills", "tidy-notes")})`);
    expect(doctor.stdout).toContain(
      [
        "    metadata:",
        "      version: 1.2.0",
        "      category: productivity",
        "      tags: notes, index",
        "      spar.moves: file_read file_list",
        '      spar.capabilities: "file_read"',
      ].join("\n"),
    );
    expect(doctor.stdout).toContain("then install it again from its source with --replace");
    expect(doctor.stdout).toMatch(/^105 skills load; 0 do not; 1 use the old layout$/m);
    const json = JSON.parse((await daemon.cli(["move", "doctor", "--json"])).stdout);
    expect(json.notes.map((n: { name: string; legacy: boolean }) => [n.name, n.legacy])).toEqual([
      ["pdf-forms", false],
      ["tidy-notes", true],
    ]);
    // None of the 103 bundled skills needs a word.
    expect(json.notes.every((n: { source: string }) => n.source === "installed")).toBe(true);
  });

  it("installs a skill of a few MiB from a folder: its files in the body, past the API's 1 MiB", async () => {
    const dir = join(sources, "price-tables");
    mkdirSync(join(dir, "references"), { recursive: true });
    writeFileSync(
      join(dir, "SKILL.md"),
      "---\nname: price-tables\ndescription: Look up list prices by SKU. Use when asked for a price.\n---\n\n# Prices\nRead references/prices.md with skill_read.\n",
    );
    const rows = Array.from(
      { length: 75_000 },
      (_, i) => `| SKU-${String(i).padStart(6, "0")} | Widget ${i} | ${(i % 997) + 0.99} |`,
    );
    const table = `| SKU | Item | Price |\n| --- | --- | --- |\n${rows.join("\n")}\n`;
    expect(table.length).toBeGreaterThan(2.5 * 1024 * 1024);
    writeFileSync(join(dir, "references", "prices.md"), table);
    const installed = await daemon.cli(["move", "install", dir]);
    expect(installed.stderr).toBe("");
    expect(installed.stdout).toMatch(/installed price-tables 0\.0\.0 from local:/);
    const info = JSON.parse((await daemon.cli(["move", "info", "price-tables", "--json"])).stdout);
    expect(JSON.stringify(info)).toContain("references/prices.md");
  });

  it("says which skill does not load and why, exit 1", async () => {
    // A folder the lock lists whose SKILL.md was broken on disk after the install.
    writeFileSync(join(home, "skills", "tidy-notes", "SKILL.md"), "---\nname: tidy-notes\n---\n");
    const doctor = await daemon.cli(["move", "doctor"]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/NOT LOADED {2}.*tidy-notes\/SKILL\.md\n {2}.*"description" is missing/);
  });
});
