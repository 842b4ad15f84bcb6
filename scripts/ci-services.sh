#!/usr/bin/env bash
# Starts the PostgreSQL and Redis servers the scale-out tests use, on loopback, and prints the two
# variables that point the tests at them (eval its output). Debian's packages: postgresql, redis-server.
# Idempotent: a server already answering is left as it is.
set -euo pipefail
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
as_postgres=("${as_root[@]}" -u postgres)
[ "$(id -u)" -eq 0 ] && as_postgres=(runuser -u postgres --)

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save "" --appendonly no >&2
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

if [ -z "$(pg_lsclusters -h)" ]; then
  # The package made no cluster (create_main_cluster off): make the default one.
  "${as_root[@]}" pg_createcluster "$(ls /usr/lib/postgresql | sort -V | tail -n 1)" main >&2
fi
read -r version cluster _ < <(pg_lsclusters -h | head -n 1)
if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  "${as_root[@]}" pg_ctlcluster "$version" "$cluster" start >&2
  for _ in $(seq 100); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.1; done
fi
if ! "${as_postgres[@]}" psql -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'spar'" | grep -q 1; then
  "${as_postgres[@]}" psql -q -c "CREATE ROLE spar LOGIN PASSWORD 'spar'" >&2
fi
if ! "${as_postgres[@]}" psql -tAc "SELECT 1 FROM pg_database WHERE datname = 'spar'" | grep -q 1; then
  "${as_postgres[@]}" createdb -O spar spar >&2
fi

echo "export SPAR_TEST_DATABASE_URL=postgres://spar:spar@127.0.0.1:5432/spar"
echo "export SPAR_TEST_REDIS_URL=redis://127.0.0.1:6379/0"
