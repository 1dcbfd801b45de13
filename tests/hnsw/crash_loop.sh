#!/usr/bin/env bash
# Crash loop: CYCLES times, the server is killed (pg_ctl -m immediate) at a seeded random moment
# while sessions insert, update, delete and vacuum, then restarted. After each recovery:
#  * hnsw_index_parent_check(heapallindexed => true) passes: the pages and their links are
#    sound, and every row the table holds (every acknowledged insert and update, no row whose
#    delete was acknowledged) is in the index with its value;
#  * the inserted rows no delete can touch (id % 5 <> 0) never become fewer (commits survive).
# At the end, pgvector 0.8.6 opens the same data directory and answers 20 searches exactly as
# our library does.
# Usage: tests/hnsw/crash_loop.sh [WORKDIR] [CYCLES]   (default 10)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-crash-loop.XXXXXX)}
cycles=${2:-10}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.3)" -c "
  CREATE TABLE c (id bigint PRIMARY KEY, v vector(12));
  INSERT INTO c SELECT i, array(SELECT random()::real FROM generate_series(1, 12) WHERE i > 0)
    FROM generate_series(1, 2000) i;
  CREATE INDEX c_idx ON c USING hnsw (v vector_l2_ops) WITH (m = 8, ef_construction = 32);" >/dev/null
vec="array(SELECT random()::real FROM generate_series(1, 12) WHERE {i} > 0)"
# insert_file SESSION CYCLE: ids of their own, so that no cycle repeats an earlier one's.
insert_file() {
  python3 -c "
for i in range(1, 50001):
    print(f\"INSERT INTO c SELECT $1 * 10000000 + $2 * 100000 + {i}, $vec;\")
" > "$work/insert$1.sql"
}
python3 -c "
for i in range(1, 200001):
    print(f\"UPDATE c SET v = $vec WHERE id = {(i * 7919) % 2000 + 1};\")
" > "$work/update.sql"
python3 -c "
for i in range(1, 20001):
    print(f'DELETE FROM c WHERE id % 89 = {i % 89} AND id % 5 = 0;')
    print('VACUUM c;')
" > "$work/vacuum.sql"

RANDOM=42
previous=0
for ((cycle = 1; cycle <= cycles; cycle++)); do
  pids=()
  for s in 1 2 3; do insert_file "$s" "$cycle"; done
  for f in insert1 insert2 insert3 update vacuum; do
    sql ours -f "$work/$f.sql" > /dev/null 2>&1 &
    pids+=($!)
  done
  sleep "$((1 + RANDOM % 3)).$((RANDOM % 10))"
  as_postgres "$OURS/bin/pg_ctl" -D "$data" -m immediate stop > /dev/null
  for p in "${pids[@]}"; do wait "$p" || true; done
  running=""
  start ours
  out=$(sql ours -c "SELECT hnsw_index_parent_check('c_idx', true)" 2>&1) \
    || fail "cycle $cycle: the verifier after recovery: $out"
  rows=$(sql ours -c "SELECT count(*) FROM c")
  kept=$(sql ours -c "SELECT count(*) FROM c WHERE id > 2000 AND id % 5 <> 0")
  [ "$kept" -ge "$previous" ] || fail "cycle $cycle: $kept inserted rows kept, $previous before"
  echo "   cycle $cycle: $rows rows, verifier clean${out:+ ($out)}"
  previous=$kept
done
grep -q 'terminated by signal' "$data.log" && fail "a backend was killed by a signal"

echo "-- pgvector 0.8.6 on the same data directory"
queries="SET enable_seqscan = off; SET hnsw.ef_search = 100;
  SELECT q, array(SELECT id FROM c ORDER BY v <-> (SELECT v FROM c WHERE id = q) LIMIT 10)
  FROM generate_series(1, 400, 20) q"
sql ours -c "$queries" > "$work/ours.out"
stop ours
start pgvector
sql pgvector -c "$queries" > "$work/pgvector.out"
stop pgvector
diff "$work/ours.out" "$work/pgvector.out" > /dev/null || fail "pgvector answers differently (diff $work/ours.out $work/pgvector.out)"
echo "crash loop: ok ($cycles cycles, verifier clean after each, pgvector answers the same 20 searches)"
