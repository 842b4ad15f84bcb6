/**
 * The `sandbox-exec` profile for one process on macOS, with the file and network rules of the
 * Linux sandbox as far as Seatbelt can give them: everything denied, then reading the system
 * (`/usr`, `/bin`, `/sbin`, `/System`, `/Library`, `/private/etc`, `/dev`, the PATH folders),
 * reading and writing the workspace and a private temporary folder, and no network but the egress
 * proxy's loopback port when the process has network. The data dir is denied by name as well, in
 * case a PATH folder holds it. macOS has no PID namespace: the process group is what is killed.
 */

export interface SeatbeltPlan {
  workspace: string;
  tmp: string;
  dataDir: string;
  pathDirs: readonly string[];
  /** The egress proxy's port on 127.0.0.1, when the process has network. */
  egressPort?: number;
}

const SYSTEM = [
  "/usr",
  "/bin",
  "/sbin",
  "/System",
  "/Library",
  "/private/etc",
  "/private/var/db/timezone",
  "/dev",
];

/** Seatbelt profile strings are double-quoted; a path with a quote or a backslash is escaped. */
function quoted(path: string): string {
  return `"${path.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function seatbeltProfile(plan: SeatbeltPlan): string {
  const readable = [...SYSTEM, ...plan.pathDirs.filter((d) => d.startsWith("/"))];
  const lines = [
    "(version 1)",
    "(deny default)",
    "(allow process-fork)",
    "(allow process-exec)",
    "(allow signal (target same-sandbox))",
    "(allow sysctl-read)",
    "(allow mach-lookup)",
    '(allow file-read-metadata (literal "/") (literal "/private") (literal "/var") (literal "/tmp"))',
    `(allow file-read* ${readable.map((d) => `(subpath ${quoted(d)})`).join(" ")})`,
    `(allow file-read* file-write* (subpath ${quoted(plan.workspace)}) (subpath ${quoted(plan.tmp)}))`,
    '(allow file-write* (literal "/dev/null"))',
    `(deny file-read* file-write* (subpath ${quoted(plan.dataDir)}))`,
    `(allow file-read* file-write* (subpath ${quoted(plan.workspace)}))`,
  ];
  if (plan.egressPort !== undefined) {
    lines.push(`(allow network-outbound (remote ip "localhost:${plan.egressPort}"))`);
  }
  return `${lines.join("\n")}\n`;
}
