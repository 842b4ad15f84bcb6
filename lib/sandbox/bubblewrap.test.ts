import { describe, expect, it } from "vitest";
import { bwrapArgs, SANDBOX_HOME, unreadableEtc } from "./bubblewrap.js";
import { withLimits } from "./limits.js";
import { seatbeltProfile } from "./macos.js";

const plan = {
  bwrap: "/usr/bin/bwrap",
  command: ["git", "status"],
  workspace: "/tmp/home/workspaces/a",
  cwd: "/tmp/home/workspaces/a",
  env: { PATH: "/usr/bin:/bin", LANG: "C.UTF-8" },
  pathDirs: ["/usr/bin", "/bin", "/tmp/tools", "relative"],
};

/** The option pairs and triples bwrap is given, in order, as text: easy to search. */
const line = (args: string[]) => args.join(" ");

describe("bwrapArgs", () => {
  it("lends mounts read-only at their own path, after the workspace, before the root is made read-only", () => {
    const text = line(
      bwrapArgs({ ...plan, mounts: [{ source: "/srv/spar/skills/fmt", target: "/skills/fmt" }] }),
    );
    expect(text).toContain("--ro-bind-try /srv/spar/skills/fmt /skills/fmt");
    expect(text).not.toMatch(/--bind(-try)? \/srv\/spar\/skills/);
    expect(text.indexOf("/skills/fmt")).toBeGreaterThan(text.indexOf(`--bind ${plan.workspace}`));
    expect(text.indexOf("/skills/fmt")).toBeLessThan(text.indexOf("--remount-ro /"));
  });

  it("refuses a mount over the sandbox's own folders, the workspace, or at a bad path", () => {
    for (const target of [
      "/usr/lib/x",
      "/etc/skills",
      "/tmp/skills",
      "/home/fighter/x",
      "/proc/x",
      "/run/spar/x",
      "/skills",
      "skills/x",
      "/skills/../etc",
      "/skills//x",
      "/tmp/home/x",
    ]) {
      expect(() => bwrapArgs({ ...plan, mounts: [{ source: "/srv/x", target }] }), target).toThrow(
        /internal: (a sandbox mount may not be at|the sandbox mount .* overlaps)/,
      );
    }
  });

  it("builds the sandbox the README describes, mounts in an order that keeps each one visible", () => {
    const args = bwrapArgs({ ...plan, pathDirs: [...plan.pathDirs] });
    const text = line(args);
    expect(args[0]).toBe("/usr/bin/bwrap");
    expect(text).toContain("--ro-bind /usr /usr");
    expect(text).toContain("--ro-bind /etc /etc");
    for (const flag of ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"])
      expect(args).toContain(flag);
    expect(text).toContain("--cap-drop ALL");
    expect(text).toContain("--remount-ro /");
    expect(text).toContain(`--setenv HOME ${SANDBOX_HOME}`);
    expect(text).toContain("--setenv TMPDIR /tmp");
    expect(text).toContain(`--chdir ${plan.cwd}`);
    expect(text.endsWith("-- git status")).toBe(true);
    // /tmp first, then what lies under it: the workspace and a PATH folder there stay visible.
    const at = (needle: string) => text.indexOf(needle);
    expect(at("--tmpfs /tmp")).toBeGreaterThan(-1);
    expect(at("--tmpfs /tmp")).toBeLessThan(at(`--bind ${plan.workspace} ${plan.workspace}`));
    expect(at("--tmpfs /tmp")).toBeLessThan(
      at("--ro-bind /tmp/tools /tmp/tools") === -1 ? Infinity : at("--ro-bind /tmp/tools /tmp/tools"),
    );
    // A relative PATH entry is never mounted; nothing of the data dir but the workspace is.
    expect(text).not.toContain("relative");
    expect(text).not.toMatch(/--(ro-)?bind \/tmp\/home /);
    // No network forwarder without egress.
    expect(text).not.toContain("egress");
  });

  it("sizes /tmp and HOME when asked, and lends the egress socket and forwarder with the proxy variables", () => {
    const text = line(
      bwrapArgs({
        ...plan,
        tmpBytes: 1024,
        egress: {
          socket: "/tmp/e/egress.sock",
          port: 3128,
          node: "/usr/bin/node",
          script: "/x/egress-forward.js",
        },
      }),
    );
    expect(text).toContain("--size 1024 --tmpfs /tmp --size 1024 --tmpfs /home/fighter");
    expect(text).toContain("--bind /tmp/e/egress.sock /run/spar/egress.sock");
    expect(text).toContain("--setenv HTTPS_PROXY http://127.0.0.1:3128");
    expect(text).toContain(
      "-- /run/spar/node /run/spar/egress-forward.mjs /run/spar/egress.sock 3128 -- git status",
    );
  });

  it("hides the entries of /etc that are not world-readable", () => {
    for (const entry of unreadableEtc()) expect(entry.path.startsWith("/etc/")).toBe(true);
    const text = line(bwrapArgs(plan));
    for (const entry of unreadableEtc())
      expect(text).toContain(entry.dir ? `--tmpfs ${entry.path}` : `--ro-bind /dev/null ${entry.path}`);
  });
});

describe("withLimits", () => {
  it("wraps the program in prlimit with every limit, and no core dumps", () => {
    expect(
      withLimits(
        "/usr/bin/prlimit",
        { cpu_s: 5, memory_mb: 2, processes: 8, file_size_mb: 1, open_files: 64 },
        ["x", "y"],
      ),
    ).toEqual([
      "/usr/bin/prlimit",
      "--cpu=5",
      `--as=${2 * 1024 * 1024}`,
      "--nproc=8",
      `--fsize=${1024 * 1024}`,
      "--nofile=64",
      "--core=0",
      "--",
      "x",
      "y",
    ]);
  });
});

describe("seatbeltProfile (macOS)", () => {
  it("denies by default, opens the workspace and temp folder, denies the data dir, and the network but the proxy", () => {
    const profile = seatbeltProfile({
      workspace: '/Users/a/.spar/workspaces/x"y',
      tmp: "/private/tmp/s",
      dataDir: "/Users/a/.spar",
      pathDirs: ["/opt/homebrew/bin"],
    });
    expect(profile.startsWith("(version 1)\n(deny default)\n")).toBe(true);
    expect(profile).toContain('(deny file-read* file-write* (subpath "/Users/a/.spar"))');
    expect(profile).toContain('(subpath "/Users/a/.spar/workspaces/x\\"y")');
    expect(profile).toContain('(subpath "/opt/homebrew/bin")');
    expect(profile).not.toContain("network-outbound");
    // The workspace is opened again after the data dir is denied: the last rule that matches wins.
    expect(profile.lastIndexOf("workspaces")).toBeGreaterThan(
      profile.indexOf("(deny file-read* file-write*"),
    );
    const withProxy = seatbeltProfile({
      workspace: "/w",
      tmp: "/t",
      dataDir: "/d",
      pathDirs: [],
      egressPort: 41000,
    });
    expect(withProxy).toContain('(allow network-outbound (remote ip "localhost:41000"))');
  });
});
