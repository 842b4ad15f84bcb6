/**
 * Node 24.19+ registers a cleanup hook in every native `ObjectWrap`; better-sqlite3 before 13
 * derives Database and Statement from it, and when the garbage collector finalizes one outside a
 * JavaScript context (an idle GC), removing that hook aborts the whole process
 * (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook). 13.x fixes it but crashes
 * on Node 20, which we also support. So this store never lets one be collected: every connection and
 * every statement it makes is kept here for the life of the process. That is a fixed, small set
 * (statements are prepared once per store), and Node frees them at exit through the hook itself.
 * `db.pragma()` prepares a throwaway statement natively, out of reach: use `db.exec("PRAGMA …")`.
 */
import Database from "better-sqlite3-multiple-ciphers";

const kept: object[] = [];

/** Opens a connection whose statements (from `prepare`) are never garbage collected. */
export function openRetained(path: string, options: Database.Options): Database.Database {
  const db = new Database(path, options);
  kept.push(db);
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    kept.push(statement);
    return statement;
  }) as Database.Database["prepare"];
  return db;
}
