#!/usr/bin/env bash
# No scan, rescan, cursor or error path may use Postgres memory after it was freed. Until
# 2026-12-02 a read stream kept between hops (hnsw.debug_read_stream_reset, settable by any
# user) lived in the scan's temporary context, which every rescan reset and amendscan deleted
# before the stream was ended: the LATERAL query below killed the backend with signal 11 and
# the postmaster restarted every session.
#  1. docs (id int, embedding vector(256)): 30,000 random rows, an hnsw cosine index, a server
#     with shared_buffers = 16MB (the index is about three times that).
#  2. As an ordinary role, for every hnsw.io_method: the issue's LATERAL query (one rescan per
#     outer row), the same with an iterative scan and a filter, an array subquery per row,
#     cursors closed early (plain and LATERAL), errors in the middle of a scan (plain,
#     LATERAL, inside a savepoint that is rolled back, then the scan again) and a statement
#     timeout. The removed measurement setting is refused, and the remaining one
#     (hnsw.debug_heap_prefetch) is refused to non-superusers.
#  3. Once cold (server restarted, page cache dropped when root) and once warm.
#  4. Every expected ERROR is counted and no other is allowed; every method returns the same
#     ids; the cold pass must really have overlapped reads (else it tested nothing); the
#     server log must show no backend killed by a signal and no crash restart.
#  5. A build that goes past maintenance_work_mem (its on-disk inserts reset a context per
#     tuple) under every method, checked with the index's answers.
# Usage: tests/hnsw/scan_lifetimes.sh [WORKDIR]   (OURS=..., PORT_OURS; about 3 minutes)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-lifetimes.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

start ours
sql ours -c "ALTER SYSTEM SET shared_buffers = '16MB'" -c "ALTER SYSTEM SET effective_io_concurrency = 16"
stop ours
start ours
sql ours <<'SQL'
CREATE EXTENSION vector;
CREATE EXTENSION vector_rs;
SELECT setseed(0.17);
CREATE TABLE docs (id int, embedding vector(256));
INSERT INTO docs SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 256) WHERE i > 0)
  FROM generate_series(1, 30000) i;
SET maintenance_work_mem = '512MB';
CREATE INDEX docs_idx ON docs USING hnsw (embedding vector_cosine_ops);
CREATE ROLE app LOGIN;
GRANT SELECT ON docs TO app;
SQL

app_sql() {
  PGOPTIONS="-c client_min_messages=warning" "$OURS/bin/psql" -X -q -At -h "$work/cluster" \
    -p "$PORT_OURS" -U app -d postgres "$@"
}

# One session of the ordinary role with io_method $1. Prints tagged result lines and the
# errors (psql -v ON_ERROR_STOP=0 goes on after each).
session() {
  app_sql -v method="$1" 2>&1 <<'SQL'
\set ON_ERROR_STOP 0
-- Loads the library, so that the settings below are checked when they are set.
SELECT 'loaded ' || ('[1]'::vector IS NOT NULL);
SET hnsw.io_method = :'method';
SET hnsw.debug_read_stream_reset = on;
SET hnsw.debug_heap_prefetch = off;
SET enable_seqscan = off;
SET max_parallel_workers_per_gather = 0;
-- The issue's query: one index rescan per outer row.
SELECT 'lateral ' || count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d ORDER BY d.embedding <=> q.embedding LIMIT 5) x
WHERE q.id % 150 = 0;
SELECT 'lateral-prefetched ' || (prefetched > 0) FROM hnsw_last_scan_stats();
SELECT 'lateral-ids ' || md5(string_agg(q.id || ':' || x.id, ',' ORDER BY q.id, x.n)) FROM docs q,
  LATERAL (SELECT id, row_number() OVER () AS n
           FROM (SELECT id FROM docs d ORDER BY d.embedding <=> q.embedding LIMIT 5) s) x
WHERE q.id % 150 = 0;
-- A subquery per row, and an iterative scan with a filter.
SELECT 'subquery ' || md5(string_agg(array(SELECT d.id FROM docs d
  ORDER BY d.embedding <=> q.embedding LIMIT 3)::text, ',' ORDER BY q.id))
FROM docs q WHERE q.id % 250 = 0;
SET hnsw.iterative_scan = relaxed_order;
SELECT 'iterative ' || count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d WHERE d.id % 7 = 0 ORDER BY d.embedding <=> q.embedding LIMIT 5) x
WHERE q.id % 300 = 0;
RESET hnsw.iterative_scan;
-- Cursors closed early: a plain scan, and a LATERAL one in the middle of its rescans.
BEGIN;
DECLARE c1 CURSOR FOR SELECT id FROM docs ORDER BY embedding <=> (SELECT embedding FROM docs WHERE id = 7);
FETCH 3 FROM c1;
CLOSE c1;
DECLARE c2 CURSOR FOR SELECT q.id, x.id FROM docs q,
  LATERAL (SELECT id FROM docs d ORDER BY d.embedding <=> q.embedding LIMIT 5) x WHERE q.id % 150 = 0;
FETCH 17 FROM c2;
CLOSE c2;
COMMIT;
SELECT 'cursors closed';
-- Errors in the middle of a scan: a plain one, in the middle of rescans, and in a savepoint
-- rolled back before the same session scans again.
SELECT id FROM docs WHERE 1 / (id % 2) > 0 ORDER BY embedding <=> (SELECT embedding FROM docs WHERE id = 9) LIMIT 50;
SELECT count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d WHERE 1 / (d.id % 13) > 0 ORDER BY d.embedding <=> q.embedding LIMIT 5) x
WHERE q.id % 150 = 0;
BEGIN;
SAVEPOINT s;
SELECT count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d WHERE 1 / (d.id % 11) > 0 ORDER BY d.embedding <=> q.embedding LIMIT 5) x
WHERE q.id % 150 = 0;
ROLLBACK TO SAVEPOINT s;
SELECT 'after savepoint ' || count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d ORDER BY d.embedding <=> q.embedding LIMIT 5) x
WHERE q.id % 150 = 0;
COMMIT;
-- Cancelled in the middle of its rescans.
SET statement_timeout = '200ms';
SELECT count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d ORDER BY d.embedding <=> q.embedding LIMIT 5) x;
RESET statement_timeout;
SELECT 'done';
SQL
}

# Errors each session must raise, exactly once each, and nothing else.
expected_errors=(
  'invalid configuration parameter name "hnsw.debug_read_stream_reset"'
  'permission denied to set parameter "hnsw.debug_heap_prefetch"'
  'division by zero'
  'division by zero'
  'division by zero'
  'canceling statement due to statement timeout'
)

check_session() {
  local label=$1 out=$2 want
  want=$(printf '%s\n' "${expected_errors[@]}" | sort)
  got=$(grep -o 'ERROR: .*' <<<"$out" | sed 's/^ERROR:  *//' | sort)
  [ "$got" = "$want" ] || fail "$label: errors raised differ from the expected ones:
$got
--- expected:
$want
--- session output:
$out"
  for line in 'lateral 1000' 'after savepoint 1000' 'cursors closed' 'done'; do
    grep -qx "$line" <<<"$out" || fail "$label: no line '$line' in: $out"
  done
  grep -q '^iterative 500$' <<<"$out" || fail "$label: iterative scan did not return 500 rows: $out"
}

plan=$(app_sql -c "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT count(*) FROM docs q,
  LATERAL (SELECT id FROM docs d ORDER BY d.embedding <=> q.embedding LIMIT 5) x WHERE q.id % 150 = 0")
grep -q "Index Scan using docs_idx" <<<"$plan" || fail "the LATERAL query does not rescan the index: $plan"

ids_of() { grep -E "^(lateral-ids|subquery) " <<<"$1"; }

# No backend died, and the postmaster never restarted the others.
no_crash_so_far() {
  local lines
  lines=$(grep -E "terminated by signal|was terminated by exception|all server processes terminated" "$data.log" || true)
  [ -z "$lines" ] || fail "$1: a backend crashed:
$lines"
}
reference=""
for pass in cold warm; do
  if [ "$pass" = cold ]; then
    stop ours
    if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
    start ours
  fi
  for method in read_stream prefetch off; do
    if [ "$pass" = cold ] && [ "$method" != read_stream ]; then
      # Every method starts cold.
      stop ours
      if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
      start ours
    fi
    out=$(session "$method") || true
    no_crash_so_far "$pass $method"
    check_session "$pass $method" "$out"
    ids=$(ids_of "$out")
    [ -n "$reference" ] || reference=$ids
    [ "$ids" = "$reference" ] || fail "$pass $method: ids differ from the first run"
    if [ "$pass" = cold ] && [ "$method" != off ] && [ -w /proc/sys/vm/drop_caches ]; then
      grep -qx 'lateral-prefetched true' <<<"$out" ||
        fail "$pass $method: the LATERAL scan overlapped no read, so it did not run cold: $out"
    fi
    echo "$pass $method: ${#expected_errors[@]} expected errors, same ids, no crash"
  done
done

# Builds that go past maintenance_work_mem, under every method (on-disk inserts reset a
# context after each tuple).
for method in read_stream prefetch off; do
  notice=$(PGOPTIONS="-c client_min_messages=notice" sql ours -c "SET hnsw.io_method = $method" \
    -c "SET maintenance_work_mem = '1MB'" -c "DROP TABLE IF EXISTS small" \
    -c "CREATE TABLE small AS SELECT id, embedding FROM docs WHERE id <= 4000" \
    -c "CREATE INDEX small_idx ON small USING hnsw (embedding vector_l2_ops)" 2>&1)
  grep -q "hnsw graph no longer fits into maintenance_work_mem" <<<"$notice" ||
    fail "build with $method stayed in memory: $notice"
  found=$(sql ours -c "SET enable_seqscan = off" -c "SET hnsw.ef_search = 100" -c "
    SELECT count(*) FROM small q WHERE q.id % 40 = 0 AND q.id = (SELECT s.id FROM small s
      ORDER BY s.embedding <-> q.embedding LIMIT 1)")
  [ "$found" -ge 95 ] || fail "build with $method: only $found of 100 rows find themselves"
  echo "build past maintenance_work_mem with $method: $found of 100 rows find themselves"
done

no_crash_so_far "builds"
echo "server log: no backend killed by a signal"
