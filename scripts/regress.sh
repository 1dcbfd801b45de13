#!/usr/bin/env bash
# Runs the pg_regress suite (pg_regress/sql, pg_regress/expected) against a running server.
#   scripts/regress.sh PGINSTALL SOCKDIR PORT [test ...]   (default: pg_regress/schedule)
# Env: REGRESS_OUT (results folder, default a fresh temp dir).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
install=$1 sockdir=$2 port=$3; shift 3
bindir="$install/bin"
pgxs=$("$bindir/pg_config" --pgxs)
pg_regress="$(dirname "$pgxs")/../test/regress/pg_regress"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  mapfile -t tests < <(grep -v -E '^(#|$)' "$root/pg_regress/schedule")
fi
out=${REGRESS_OUT:-$(mktemp -d /tmp/vector-regress.XXXXXX)}
mkdir -p "$out"
chmod 777 "$out"
"$pg_regress" --inputdir="$root/pg_regress" --outputdir="$out" --bindir="$bindir" \
  --host="$sockdir" --port="$port" --user=postgres --dbname=contrib_regression \
  --load-extension=vector "${tests[@]}"
