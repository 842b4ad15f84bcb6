/**
 * `spar/sdk/store`: what a store plugin needs beside the `Store` interface and the collection
 * engine (both in `spar/sdk`): the master-key files a `spar rekey` leaves (the next secret, and
 * settling them once the store opened with one), the manifest beside a snapshot backup, and the
 * answer `spar backup` gets from a store that is backed up with its server's own tools.
 *
 * @example
 * import { readNextMasterSecret, settleMasterKeyFiles } from "spar/sdk/store";
 * const next = readNextMasterSecret(home); // try it when master.key does not open the store
 */
export {
  type BackupManifest,
  manifestPathOf,
  readBackupManifest,
  writeBackupManifest,
} from "../../lib/backup-manifest.js";
export { type RekeySettlement, readNextMasterSecret, settleMasterKeyFiles } from "../../lib/home.js";
export { type PostgresBackupFacts, postgresBackupRefusal } from "../../lib/store-backup-advice.js";
