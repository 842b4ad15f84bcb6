import type { CommandSpec } from "../command-spec.js";
import { as } from "./shared.js";

/** Moves and skills. */
export const MOVES: CommandSpec[] = [
  {
    name: "move",
    summary: "Tools (moves) and skills",
    actions: [
      {
        name: "list",
        args: "",
        summary: "Every tool with its capability, and every skill, bundled or installed",
      },
      {
        name: "search",
        args: "<query>",
        summary: "Skills and tools ranked by name, tags and description",
        options: [
          {
            flag: "--limit",
            value: "n",
            // GET /api/v1/moves/search's bounds (plugins/moves-skills).
            integer: { min: 1, max: 100 },
            summary: "At most this many results (default 10)",
          },
        ],
      },
      {
        name: "install",
        args: "<source>",
        summary:
          "A bundled skill's name (enables it), a folder, a .tar.gz/.zip, an https URL (SKILL.md, archive, a git host's repository archive) or github:owner/repo[/path][@ref]; a repository's skills install all or none; the lock records source, commit and each file's sha256",
        options: [
          {
            flag: "--skill",
            value: "name",
            repeatable: true,
            field: "skills",
            summary: "Of a repository holding many skills, only this one (repeat for more)",
          },
          {
            flag: "--force",
            summary: "Install despite high-severity scan findings (recorded, shown by security audit)",
          },
          { flag: "--replace", summary: "Replace an installed skill of the same name" },
        ],
      },
      {
        name: "scan",
        args: "<source>",
        summary:
          "Security-scan a skill (name, folder, URL or github: source): findings with rule, severity, file and line; exits 1 on high",
      },
      {
        name: "info",
        args: "<name>",
        summary:
          "Where an installed skill came from (source, ref, resolved commit or URL), when, its version, each file's size and sha256, and its findings",
      },
      {
        name: "verify",
        args: "[name]",
        summary:
          "Re-hash installed skills against the lock: each changed, missing or extra file; exits 1 if any differ",
      },
      {
        name: "update",
        args: "[name]",
        summary:
          "Fetch the same source's newest ref, scan it, show what changed (files, new and removed findings), and install only with consent; a skill pinned to a commit stays unless --ref",
        options: [
          { flag: "--ref", value: "ref", summary: "Move a github: skill to this branch, tag or commit" },
          {
            flag: "--yes",
            summary: "Install without asking (scripts); without a terminal and --yes nothing is installed",
          },
          { flag: "--force", summary: "Install despite high-severity scan findings (recorded)" },
        ],
      },
      { name: "remove", args: "<name>", summary: "Remove an installed skill, or disable a bundled one" },
      {
        name: "doctor",
        args: "",
        summary:
          "Skills that do not load, ones in Spar's layout before the Agent Skills standard (and how to convert them), ignored keys",
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/move.js")).move(action, args, as(options)),
  },
];
