import { homedir } from "node:os";
import {
  type Capability,
  definePlugin,
  isSparError,
  type MoveContext,
  type MoveHandler,
  type SpawnRefusal,
} from "../../sdk/index.js";
import { type Access, Confinement, fsFailure } from "./confine.js";
import { listFolder } from "./list.js";
import { type FileRecords, fileRecords, hashFile, type Provenance } from "./provenance.js";
import { readText } from "./read.js";
import { FILE_GRANTS, grantFolders } from "./scopes.js";
import { editFile, type WriteMode, writeFile } from "./write.js";

export interface FilesSettings {
  max_read_bytes: number;
  max_write_bytes: number;
  max_list_entries: number;
  allowed_scopes: string[];
}

/**
 * The file moves. Input arrives validated against plugin.json's schemas and the kernel has checked
 * the capability; each call opens its own confinement (the workspace plus the scope folders of the
 * grants that allow this move, as far as every fighter waiting on the turn grants them too) and
 * every path goes through it (confine.ts says how). Writes are recorded (provenance.ts): a read of a
 * file that is not as the fighter last wrote it taints the turn.
 */
export default definePlugin<{ "moves.files": FilesSettings }>({
  id: "moves-files",
  apply({ hooks, home, config, data, log }, sections) {
    const settings = sections["moves.files"];
    const resultChars = config.agent.max_tool_result_chars;

    const confined =
      (
        access: Access,
        work: (c: Confinement, input: Record<string, unknown>, context: MoveContext) => Promise<unknown>,
      ) =>
      async (input: Record<string, unknown>, context: MoveContext): Promise<unknown> => {
        let confinement: Confinement | undefined;
        try {
          confinement = await Confinement.open({
            workspace: context.workspace,
            grants: context.grants,
            callerGrants: context.callers.map((c) => c.grants),
            home,
            access,
            allowedScopes: settings.allowed_scopes,
          });
          return await work(confinement, input, context);
        } catch (err) {
          throw fsFailure(err, typeof input.path === "string" ? input.path : ".");
        } finally {
          await confinement?.close();
        }
      };

    /**
     * The fighter's file records for one call. They only ever make a read trusted: a record that
     * cannot be read or written is logged, and the file is taken as not the fighter's own.
     */
    const recordsFor = (context: MoveContext): FileRecords => {
      const records = fileRecords(data, context.fighter.id, context.taint);
      const failed = (what: string) => (err: unknown) => {
        log.warn(`moves-files: could not ${what} a file record`, { error: String(err) });
        return undefined;
      };
      return {
        wrote: (real, sha256) => records.wrote(real, sha256).catch(failed("write")),
        own: async (real, sha256) => (await records.own(real, sha256).catch(failed("read"))) === true,
        provenance: async (real, sha256, display) =>
          (await records.provenance(real, sha256, display).catch(failed("read"))) ?? {
            own: false,
            taint: { kind: "file", detail: display, move: "file_read" },
          },
      };
    };

    const handlers: Record<string, MoveHandler> = {
      file_read: {
        name: "file_read",
        run: confined("read", async (c, input, context) => {
          let found: Provenance | undefined;
          const text = await readText(
            c,
            {
              path: String(input.path),
              offset: input.offset as number | undefined,
              length: input.length as number | undefined,
            },
            { maxBytes: settings.max_read_bytes, resultChars },
            async (file, real, display) => {
              found = await recordsFor(context).provenance(
                real,
                async () => (await hashFile(file)).digest("hex"),
                display,
              );
            },
          );
          if (found && !found.own) context.untrusted(found.taint);
          return text;
        }),
      },
      file_write: {
        name: "file_write",
        run: confined("write", (c, input, context) =>
          writeFile(
            c,
            {
              path: String(input.path),
              content: String(input.content),
              mode: input.mode as WriteMode | undefined,
            },
            settings.max_write_bytes,
            recordsFor(context),
          ),
        ),
      },
      file_edit: {
        name: "file_edit",
        run: confined("write", (c, input, context) =>
          editFile(
            c,
            {
              path: String(input.path),
              old: String(input.old),
              new: String(input.new),
              count: input.count as number | undefined,
            },
            settings.max_write_bytes,
            recordsFor(context),
          ),
        ),
      },
      file_list: {
        name: "file_list",
        run: confined("read", (c, input, { signal }) =>
          listFolder(
            c,
            {
              path: input.path as string | undefined,
              recursive: input.recursive === true,
              limit: input.limit as number | undefined,
            },
            { maxEntries: settings.max_list_entries, resultChars },
            signal,
          ),
        ),
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
    hooks.fighter.spawning.tap((manifest) =>
      scopeRefusal(manifest.capabilities ?? [], settings.allowed_scopes),
    );
  },
});

/** Why a manifest's file grants cannot be held (a scope the operator does not allow), or undefined. */
export function scopeRefusal(
  grants: readonly Capability[],
  allowedScopes: readonly string[],
  userHome = homedir(),
): SpawnRefusal | undefined {
  for (const [index, grant] of grants.entries()) {
    if (!FILE_GRANTS.has(grant.type)) continue;
    try {
      grantFolders(grant, userHome, allowedScopes);
    } catch (err) {
      const code = isSparError(err) ? err.code : undefined;
      if (code !== "CAPABILITY_DENIED" && code !== "VALIDATION_FAILED") throw err;
      return { code, message: (err as Error).message, path: `/capabilities/${index}/scope` };
    }
  }
  return undefined;
}
