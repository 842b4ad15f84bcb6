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
          "A bundled skill's name (enables it), a folder, or an https URL to a SKILL.md, .tar.gz or .zip",
        options: [
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
          "Security-scan a skill (name, folder or URL): findings with rule, severity, file and line; exits 1 on high",
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
