import type { CommandSpec } from "../command-spec.js";
import { as } from "./shared.js";

/** Signing keys and signed requests. */
export const KEYS: CommandSpec[] = [
  {
    name: "key",
    summary: "The public keys allowed to sign requests (a running daemon sees a change at once)",
    actions: [
      {
        name: "add",
        args: "<name> <public-key>",
        summary:
          "Authorize a public key: PEM, base64 of the raw 32 bytes, a file holding either, or - to read it from stdin",
        options: [
          {
            flag: "--scope",
            value: "scope",
            summary:
              "What it may do: admin, operator (all but backups), read (GET only) or chat:<fighter>[,<fighter>…]",
            default: "admin",
          },
        ],
      },
      { name: "list", args: "", summary: "The authorized keys, their fingerprints and scopes" },
      {
        name: "scope",
        args: "<name> <scope>",
        summary: "Change a key's scope: admin, operator, read or chat:<fighter>[,<fighter>…]",
      },
      {
        name: "remove",
        args: "<name>",
        summary: "Stop accepting a key",
        options: [
          {
            flag: "--force",
            summary: 'Remove it even if it is "cli", the key this CLI signs its requests with',
          },
        ],
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/key.js")).key(action, args, as(options)),
  },
  {
    name: "sign",
    args: "<method> <path> [body]",
    summary: "Print the signature headers for one request (for curl); body - reads stdin",
    options: [
      { flag: "--key", value: "file", summary: "The private key (PEM) to sign with (default: the CLI's)" },
      { flag: "--key-id", value: "name", summary: "The name the key is authorized under (default: cli)" },
    ],
    run: async ({ args, options }) => (await import("../commands/sign.js")).sign(args, as(options)),
  },
];
