#!/usr/bin/env bash
# hnsw indexes built and maintained by our library must answer identically on pristine
# pgvector 0.8.6 (the mirror of pgvector_index_on_ours.sh, with the same schema and queries).
#  1. A cluster is created on our library with pgvector_index_on_ours.schema.sql: every hnsw
#     operator class, several m / ef_construction, NULL and zero values, duplicates, values so
#     large that element and neighbor tuples sit on different pages, empty graphs, and then
#     deletes, VACUUM and inserts, all done by our library. Every index passes the page check
#     (check_pages.py).
#  2. The query script is generated (pgvector_index_on_ours.queries-gen.sql) and run on our
#     library with pgvector_index_on_ours.plans.sql.
#  3. The server is stopped, the SAME data directory is started on pgvector 0.8.6 and the same
#     script runs again: ids, order, plans and errors must be identical (iterative scans stopped
#     by the memory limit are compared separately, as in pgvector_index_on_ours.sh).
# Usage: tests/hnsw/ours_index_on_pgvector.sh [WORKDIR]   (OURS=..., PGVECTOR=..., ports)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-ours-on-pgvector.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
prefix=$(cd "$(dirname "$0")" && pwd)/pgvector_index_on_ours

prelude="SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0; SET client_min_messages = warning;"

run_queries() { # LIB OUTFILE
  { echo "SELECT pg_stat_reset();"; echo "$prelude"; sed '/^-- memory-limited$/,$d' "$work/queries.sql"
    cat "$prefix.plans.sql"; echo "$prelude"; sed -n '/^-- memory-limited$/,$p' "$work/queries.sql"
  } > "$work/run.sql"
  "$(install_of "$1")/bin/psql" -X -q -At -h "$work/cluster" -p "$(port_of "$1")" -U postgres \
    -d postgres -v ON_ERROR_STOP=0 -f "$work/run.sql" > "$2" 2>&1 || true
  sed -i -E 's/^psql:[^:]*:[0-9]+: //' "$2"
}

echo "-- our library: build and maintain the indexes"
start ours
sql ours -f "$prefix.schema.sql" > "$work/schema.log"
sql ours -f "$prefix.queries-gen.sql" > "$work/queries.sql"
indexes=$(sql ours -c "SELECT c.relname || ' ' || i.indrelid::regclass || ' ' || o.opcname
  FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid JOIN pg_am a ON a.oid = c.relam
  JOIN pg_opclass o ON o.oid = i.indclass[0] WHERE a.amname = 'hnsw' ORDER BY 1")
echo "   $(echo "$indexes" | wc -l) hnsw indexes, $(grep -c . "$work/queries.sql") statements"
sql ours -c "VACUUM"
while read -r index table opclass; do
  # Cosine operator classes leave out values of norm 0 (their cosine distance is NaN).
  rows="v IS NOT NULL"
  case $opclass in *cosine*) rows="$rows AND (v <=> v) <> 'NaN'::float8" ;; esac
  ROWS=$rows EXACT=1 check_pages ours "$index" "$table" > "$work/check.out" ||
    { cat "$work/check.out"; fail "page check of $index"; }
done <<< "$indexes"
echo "   page check passed for every index"
run_queries ours "$work/ours.out"
stop ours

echo "-- the same data directory on pgvector 0.8.6"
start pgvector
run_queries pgvector "$work/pgvector.out"
stop pgvector

results=$(grep -c '^[a-z_0-9]* [a-z0-9 ]*|{' "$work/ours.out" || true)
scans=$(grep -c 'Index Scan using' "$work/ours.out" || true)
echo "   $results result rows, $scans index scans in plans"
[ "$results" -gt 0 ] && [ "$scans" -gt 0 ] || fail "no results or no index scans"
mem='^[a-z_0-9]+ mem[0-9]+ '
grep -v -E "$mem" "$work/ours.out" > "$work/ours.main"
grep -v -E "$mem" "$work/pgvector.out" > "$work/pgvector.main"
grep -E "$mem" "$work/ours.out" > "$work/ours.mem" || true
grep -E "$mem" "$work/pgvector.out" > "$work/pgvector.mem" || true
if ! diff -u "$work/ours.main" "$work/pgvector.main" > "$work/diff"; then
  echo "FAIL: pgvector answers differently on our indexes ($(grep -c '^-[^-]' "$work/diff") lines; $work/diff):"
  head -40 "$work/diff"
  exit 1
fi
memdiff=$(diff "$work/ours.mem" "$work/pgvector.mem" | grep -c '^<' || true)
if [ "$memdiff" -gt 0 ]; then
  echo "KNOWN GAP: $memdiff of $(wc -l < "$work/ours.mem") memory-limited iterative scans differ"
  [ "${STRICT_MEMORY:-0}" = 1 ] && fail "STRICT_MEMORY=1"
fi
echo "OK: pgvector answers identically on indexes our library built ($work)"
