#!/usr/bin/env bash
# Crash recovery of our library's WAL: the server is killed (pg_ctl -m immediate) while several
# sessions insert into an hnsw index and another deletes and vacuums, then restarted.
#  1. Table c (vector(12)) with 3000 rows and an hnsw index built without a checkpoint after it
#     (so recovery replays the build's log_newpage_range records too); an unlogged table u with
#     an index (its INIT fork comes from ambuildempty).
#  2. Four sessions insert rows one transaction at a time, one session deletes rows and runs
#     VACUUM in a loop, one inserts into u. After a few seconds: immediate shutdown.
#  3. After recovery: the index passes the page check (every row indexed), every committed row
#     is found by an index scan searching its own value (at hnsw.ef_search = 100, and those
#     not found then at 1000), but for
#     elements the page check finds unreachable from the entry point and up to two the
#     approximate search misses (counted), and a VACUUM then leaves
#     exactly the table's rows. The unlogged table is empty, its index works. The verifier
#     (hnsw_index_parent_check with heapallindexed) passes after recovery, after the VACUUM
#     and after the inserts, and the page check compares every row's value with the vector
#     its element holds (or, quantized, points at).
#     Concurrent inserts and vacuums can leave an element unreachable (its neighbors' lists
#     pruned it before anyone else linked to it) or a neighbor listed twice, with or without a
#     crash (the issue 3 code did, in 2 of 4 runs): the insert and repair rules, pgvector's,
#     promise neither. Those are counted, not failures: a lost row or a broken page is.
#  HNSW_OPTIONS (e.g. "quantization = 'rabitq2'") is added to both indexes' WITH: then the same
#  checks run on our quantized format (crash_recovery_quantized.sh does).
# Usage: tests/hnsw/crash_recovery.sh [WORKDIR]   (OURS=..., PORT_OURS, HNSW_OPTIONS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-crash.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
seconds=${CRASH_AFTER:-3}
options=${HNSW_OPTIONS:-}

# verify INDEX: the verifier, every row included.
verify() {
  local out
  out=$(sql ours -c "SELECT hnsw_index_parent_check('$1', true)" 2>&1) || fail "hnsw_index_parent_check('$1', true): $out"
}

as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.9)" -c "
  CREATE TABLE c (id int, v vector(12));
  INSERT INTO c SELECT i, array(SELECT random()::real FROM generate_series(1, 12) WHERE i > 0)
    FROM generate_series(1, 3000) i;
  CREATE INDEX c_idx ON c USING hnsw (v vector_l2_ops) WITH (m = 8, ef_construction = 32${options:+, $options});
  CREATE UNLOGGED TABLE u (id int, v vector(12));
  CREATE INDEX u_idx ON u USING hnsw (v vector_l2_ops) ${options:+WITH ($options)};" >/dev/null
magic=$(sql ours -c "CREATE EXTENSION IF NOT EXISTS pageinspect" -c "
  SELECT string_agg(encode(substring(get_raw_page(i, 0) FROM 25 FOR 4), 'hex'), ' ') FROM unnest(ARRAY['c_idx', 'u_idx']) i")
case $options in
  *quantization*) want="dec053a9 dec053a9" ;;
  *) want="53a953a9 53a953a9" ;;
esac
[ "$magic" = "$want" ] || fail "metapage magic numbers $magic, expected $want"

echo "-- concurrent inserts, deletes and vacuums, then an immediate shutdown after ${seconds}s"
pids=()
for s in 1 2 3 4; do
  python3 -c "
for i in range(1, 100001):
    print(f\"INSERT INTO c SELECT $((s * 1000000)) + {i}, array(SELECT random()::real FROM generate_series(1, 12) WHERE {i} > 0);\")
" > "$work/insert$s.sql"
  sql ours -f "$work/insert$s.sql" > /dev/null 2>&1 &
  pids+=($!)
done
python3 -c "
for i in range(1, 10001):
    print(f'DELETE FROM c WHERE id % 97 = {i % 97} AND id % 3 = 0;')
    print('VACUUM c;')
" > "$work/vacuum.sql"
sql ours -f "$work/vacuum.sql" > /dev/null 2>&1 &
pids+=($!)
python3 -c "
for i in range(1, 100001):
    print(f\"INSERT INTO u SELECT {i}, array(SELECT random()::real FROM generate_series(1, 12) WHERE {i} > 0);\")
" > "$work/unlogged.sql"
sql ours -f "$work/unlogged.sql" > /dev/null 2>&1 &
pids+=($!)
sleep "$seconds"
before=$(sql ours -c "SELECT count(*) FROM c")
as_postgres "$OURS/bin/pg_ctl" -D "$data" -m immediate stop > /dev/null
for p in "${pids[@]}"; do wait "$p" || true; done
echo "   about $before rows when the server was killed"

echo "-- recovery"
running=""
start ours
rows=$(sql ours -c "SELECT count(*) FROM c")
echo "   $rows rows after recovery"
[ "$rows" -gt 3000 ] || fail "no insert was committed before the crash"
pages=$(VALUES=1 CONCURRENT=1 CRASHED=1 check_pages ours c_idx c) || fail "page check: $pages"
echo "$pages" | sed 's/^/   pages: /'
unreachable=$(echo "$pages" | sed -n 's/.* \([0-9]*\) unreachable.*/\1/p')
# Every row searches its own value at ef_search 100; those not found, again at 1000.
missing=$(sql ours -c "SET enable_seqscan = off; SET hnsw.ef_search = 100;
  CREATE TEMP TABLE missed AS SELECT id, v FROM c WHERE NOT EXISTS (
    SELECT 1 FROM (SELECT c2.id FROM c c2 ORDER BY c2.v <-> c.v LIMIT 3) s WHERE s.id = c.id)" \
  -c "SET enable_seqscan = off; SET hnsw.ef_search = 1000;
  SELECT count(*) FROM missed m WHERE NOT EXISTS (
    SELECT 1 FROM (SELECT c2.id FROM c c2 ORDER BY c2.v <-> m.v LIMIT 3) s WHERE s.id = m.id)")
# A search is approximate even at ef_search 1000: once in about 20 runs here one reachable row
# is not found, and pgvector 0.8.6 on the same data directory misses the same row. Every row is
# in the index all the same (the page check above counts its heap TIDs); at most two such misses
# are tolerated, and counted.
[ "$missing" -le "$(( ${unreachable:-0} + 2 ))" ] ||
  fail "$missing committed rows not found by the index ($unreachable elements unreachable)"
echo "   committed rows not found at ef_search 1000: $missing ($unreachable elements unreachable)"
verify c_idx
echo "   hnsw_index_parent_check (heapallindexed): clean"
sql ours -c "VACUUM (INDEX_CLEANUP ON) c"
out=$(EXACT=1 VALUES=1 CONCURRENT=1 CRASHED=1 check_pages ours c_idx c) || fail "page check after VACUUM: $out"
echo "$out" | sed 's/^/   after VACUUM: /'
verify c_idx
sql ours -c "INSERT INTO c SELECT 9000000 + i, array(SELECT random()::real FROM generate_series(1, 12) WHERE i > 0)
               FROM generate_series(1, 500) i"
out=$(VALUES=1 CONCURRENT=1 CRASHED=1 check_pages ours c_idx c) || fail "page check after inserts: $out"
echo "$out" | sed 's/^/   after inserts: /'
verify c_idx

n=$(sql ours -c "SELECT count(*) FROM u")
[ "$n" = 0 ] || fail "the unlogged table kept $n rows"
sql ours -c "INSERT INTO u SELECT i, array(SELECT random()::real FROM generate_series(1, 12) WHERE i > 0)
               FROM generate_series(1, 300) i"
out=$(VALUES=1 check_pages ours u_idx u) || fail "page check of the unlogged index: $out"
echo "$out" | sed 's/^/   unlogged, after inserts: /'
verify u_idx
found=$(sql ours -c "SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM u ORDER BY v <-> (SELECT v FROM u WHERE id = 5) LIMIT 1) s WHERE id = 5")
[ "$found" = 1 ] || fail "the unlogged table's index does not find its rows"
stop ours
echo "OK: consistent after crash recovery ($work)"
