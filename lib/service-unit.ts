/**
 * What `spar service install` writes: a systemd unit (a user unit, or with `--system` a system unit
 * run as a dedicated user) or a launchd agent. Pure text from facts, so the same facts give the same
 * file, and tests check the text (systemd-analyze verify, a plist parser) without installing it.
 */

/** What a unit is made of. Every path is absolute: a service manager has no PATH or cwd of ours. */
export interface ServiceFacts {
  /** The Node binary that runs Spar (process.execPath). */
  node: string;
  /** `bin/spar.js` of this installation. */
  bin: string;
  /** The data dir the daemon uses (`SPAR_HOME`). */
  home: string;
  /** Spar's version, recorded in the file's header. */
  version: string;
  /** The README, for `Documentation=`. */
  readme: string;
}

/** A system unit's own facts: the account it runs as. */
export interface SystemFacts extends ServiceFacts {
  user: string;
}

/** The unit's name: `spar.service`, enabled as `spar`. */
export const UNIT_NAME = "spar.service";
/** The launchd label (and the plist's file name without `.plist`). */
export const LAUNCHD_LABEL = "dev.spar.daemon";

/**
 * A value for `Environment=` or `ExecStart=`: quoted when it holds a space or a quote, with `%`
 * doubled (systemd expands `%` specifiers in both).
 */
function quote(value: string): string {
  const escaped = value.replaceAll("%", "%%");
  return /[\s"'\\]/.test(escaped) ? `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"` : escaped;
}

function execStart(facts: ServiceFacts): string {
  return `ExecStart=${quote(facts.node)} ${quote(facts.bin)} start`;
}

const HEADER = (facts: ServiceFacts, how: string) => [
  `# Spar ${facts.version}, ${how} (written by spar service install).`,
  "# The paths are absolute: run spar service install again after moving Node or Spar.",
];

/**
 * Why the provider keys are not handed over with EnvironmentFile=: the daemon reads <home>/.env
 * itself, into memory (lib/home.ts withDotEnv), so the keys never enter its process environment,
 * where every process it starts and /proc/<pid>/environ would see them.
 */
const KEYS_NOTE = (home: string) => [
  `# Provider keys: put them in ${home}/.env (mode 0600). The daemon reads that file itself, into`,
  "# memory, so the keys stay out of its process environment, where every process it starts (and",
  "# /proc/<pid>/environ) would see them: that is why there is no EnvironmentFile= pointing at it.",
];

/** Options every unit gets: each one works unprivileged and leaves bubblewrap's namespaces alone. */
const COMMON_HARDENING = [
  "# bubblewrap (the sandbox of every process a move starts) needs unprivileged user namespaces:",
  "# RestrictNamespaces= and PrivateUsers= are left out on purpose, and so is SystemCallFilter=",
  "# (bwrap calls mount, pivot_root and unshare). MemoryDenyWriteExecute= is left out: V8's JIT",
  "# writes executable memory.",
  "# Privileges: none are needed. bwrap runs unprivileged (it sets no_new_privs itself).",
  "NoNewPrivileges=yes",
  "# Files the daemon makes (keys, the database, logs) are its own: 0600 and 0700.",
  "UMask=0077",
  "LockPersonality=yes",
  "RestrictRealtime=yes",
  "RestrictSUIDSGID=yes",
  "SystemCallArchitectures=native",
];

const RESTART = [
  "# A crash is restarted after 5 s; a clean stop (spar stop, systemctl stop) is not.",
  "Restart=on-failure",
  "RestartSec=5",
  "# SIGTERM stops Spar cleanly; a turn in flight is recorded first.",
  "TimeoutStopSec=30",
];

/**
 * The systemd user unit (`~/.config/systemd/user/spar.service`): started at login, or at boot with
 * `loginctl enable-linger`.
 *
 * @example
 * writeFileSync(path, userUnit({ node: process.execPath, bin, home, version, readme }));
 */
export function userUnit(facts: ServiceFacts): string {
  return [
    ...HEADER(facts, "a systemd user service"),
    "[Unit]",
    "Description=Spar agent daemon",
    `Documentation=${fileUrl(facts.readme)}`,
    "",
    "[Service]",
    "Type=simple",
    `Environment=${quote(`SPAR_HOME=${facts.home}`)}`,
    ...KEYS_NOTE(facts.home),
    execStart(facts),
    ...RESTART,
    ...COMMON_HARDENING,
    "# Not set in a user unit: ProtectSystem=, ProtectHome=, PrivateTmp=, ProtectKernelTunables= and",
    "# the other mount-namespace options. A user service manager supports them only together with",
    "# PrivateUsers= (systemd.exec(5)), which would put the daemon in a user namespace of its own and",
    "# its sandbox's namespaces inside that one. The system unit (--system) has them.",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/**
 * The systemd system unit (`/etc/systemd/system/spar.service`), run as `facts.user` with its data
 * in `facts.home` (`/var/lib/spar` by default), with the mount-namespace hardening a system service
 * manager offers.
 *
 * @example
 * writeFileSync("/etc/systemd/system/spar.service", systemUnit({ ...facts, user: "spar", home: "/var/lib/spar" }));
 */
export function systemUnit(facts: SystemFacts): string {
  return [
    ...HEADER(facts, "a systemd system service"),
    "[Unit]",
    "Description=Spar agent daemon",
    `Documentation=${fileUrl(facts.readme)}`,
    "# Providers and channels are reached over the network.",
    "Wants=network-online.target",
    "After=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `User=${facts.user}`,
    `Group=${facts.user}`,
    `Environment=${quote(`SPAR_HOME=${facts.home}`)}`,
    `Environment=${quote(`HOME=${facts.home}`)}`,
    ...KEYS_NOTE(facts.home),
    execStart(facts),
    `WorkingDirectory=${quote(facts.home)}`,
    ...RESTART,
    ...COMMON_HARDENING,
    "# The file system is read-only but for the data dir: the sandbox binds what a move may write",
    "# from there, and bwrap's own mounts happen in its namespaces, which a read-only root does not stop.",
    "ProtectSystem=strict",
    `ReadWritePaths=${quote(facts.home)}`,
    "# Other users' homes are none of its business; its own home is the data dir.",
    "ProtectHome=yes",
    "# A /tmp of its own (bwrap gives each sandbox another, in memory).",
    "PrivateTmp=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "# Unix sockets (the sandbox's egress proxy), IP, and netlink (bwrap sets up a sandbox's loopback).",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
    "# Not set: PrivateDevices= (bwrap binds /dev/null, /dev/urandom … from the host into each sandbox;",
    "# untested under a private /dev), ProtectProc= (spar finds the holder of a busy port in /proc).",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

/** Escapes text for an XML element's content. */
function xml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/**
 * The launchd agent (`~/Library/LaunchAgents/dev.spar.daemon.plist`): started at login, restarted
 * when it exits with a failure, its output in the data dir's logs folder.
 *
 * @example
 * writeFileSync(join(homedir(), "Library/LaunchAgents", `${LAUNCHD_LABEL}.plist`), launchdPlist(facts));
 */
export function launchdPlist(facts: ServiceFacts): string {
  const string = (value: string) => `<string>${xml(value)}</string>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- Spar ${xml(facts.version)}, a launchd agent (written by spar service install). Provider keys: in ${xml(facts.home)}/.env, which the daemon reads itself. -->`,
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    `  ${string(LAUNCHD_LABEL)}`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    `    ${string(facts.node)}`,
    `    ${string(facts.bin)}`,
    `    ${string("start")}`,
    "  </array>",
    "  <key>EnvironmentVariables</key>",
    "  <dict>",
    "    <key>SPAR_HOME</key>",
    `    ${string(facts.home)}`,
    "    <!-- The log is logs/spar.log; stderr (logs/spar.out) gets no readable copy of it. -->",
    "    <key>SPAR_LOG_STDERR</key>",
    `    ${string("0")}`,
    "  </dict>",
    "  <key>WorkingDirectory</key>",
    `  ${string(facts.home)}`,
    "  <key>RunAtLoad</key>",
    "  <true/>",
    "  <!-- Restarted when it exits with a failure; a clean stop (spar stop) stays stopped. -->",
    "  <key>KeepAlive</key>",
    "  <dict>",
    "    <key>SuccessfulExit</key>",
    "    <false/>",
    "  </dict>",
    "  <key>ThrottleInterval</key>",
    "  <integer>5</integer>",
    "  <key>ProcessType</key>",
    `  ${string("Background")}`,
    "  <key>Umask</key>",
    "  <integer>63</integer>",
    "  <key>StandardOutPath</key>",
    `  ${string(`${facts.home}/logs/spar.out`)}`,
    "  <key>StandardErrorPath</key>",
    `  ${string(`${facts.home}/logs/spar.out`)}`,
    "</dict>",
    "</plist>",
    "",
  ].join("\n");
}

function fileUrl(path: string): string {
  return `file://${encodeURI(path)}`;
}
