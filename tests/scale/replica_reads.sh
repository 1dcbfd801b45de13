#!/usr/bin/env bash
# Read scale-out on a streaming standby: searches spread over a primary and its hot standby,
# as a pool of read connections would spread them, while the primary takes writes.
#  1. A primary on our library: items (id bigint, embedding vector(32)) with an hnsw index and
#     50 query vectors (setseed); a standby from a base backup, hot_standby on and every other
#     setting at its default (hot_standby_feedback off, max_standby_streaming_delay 30 s).
#     Once it has replayed the primary's flush LSN, both answer the 50 queries alike.
#  2. Two search loops, one on each server, run all along while the primary takes batches of
#     inserts, a DELETE of a third of the rows, a VACUUM and more inserts (concurrent
#     with the searches, not between them).
#  3. No search may fail on either server (no error, no conflict with recovery in
#     pg_stat_database_conflicts), each loop must have run its minimum of searches, each
#     returning its 10 rows.
#  4. Once the standby's replay LSN has reached the primary's flush LSN, the 50 queries give
#     identical ids and distances on both servers at hnsw.ef_search 40 and 100, both plans use
#     the index, no deleted row is returned, and recall@10 against exact answers is printed.
# tests/hnsw/standby.sh covers replay itself in depth (builds, REINDEX CONCURRENTLY, verifiers,
# page identity, searches on the standby only, compared with a quiet primary); this one is
# the light scale-out check: reads served by both servers at once, with default standby settings.
# Every check counts; one summary line; exit status 1 if any check failed.
# Usage: tests/scale/replica_reads.sh [WORKDIR]   (OURS=..., PORT_PRIMARY (55615), PORT_STANDBY
#        (55616), REPLICA_ROWS (5000), REPLICA_MIN_SEARCHES (200))
set -euo pipefail
work=${1:-$(mktemp -d /tmp/scale-replica.XXXXXX)}
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
began=$(date +%s)
primary_port=${PORT_PRIMARY:-55615}
standby_port=${PORT_STANDBY:-55616}
rows=${REPLICA_ROWS:-5000}
min_searches=${REPLICA_MIN_SEARCHES:-200}
dim=32 nq=50
servers=(primary standby)
checks=0 failures=0 loop_pids=()
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

port_of_server() { if [ "$1" = primary ]; then echo "$primary_port"; else echo "$standby_port"; fi; }
# on SERVER ARGS...: psql on the primary or the standby.
on() {
  local s=$1; shift
  PGOPTIONS=${PGOPTIONS:--c client_min_messages=warning} "$OURS/bin/psql" -X -q -At -v ON_ERROR_STOP=1 \
    -h "$work/$s" -p "$(port_of_server "$s")" -U postgres -d postgres "$@"
}
on_exit() {
  touch "$work/loops/stop"
  [ ${#loop_pids[@]} = 0 ] || kill "${loop_pids[@]}" 2>/dev/null || true
  local s
  for s in standby primary; do "$root/scripts/pg-server.sh" stop "$OURS/bin" "$work/$s/data" 2>/dev/null; done
}
trap on_exit EXIT
check() {
  local name=$1; shift
  checks=$((checks + 1))
  if "$@"; then echo "ok: $name"; else failures=$((failures + 1)); echo "FAIL: $name"; fi
}
same_file() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -6; return 1; }; }
# same_answers A B: A holds 10 rows of every query and B the same ids and distances.
same_answers() { [ "$(grep -c . "$1")" = $((nq * 10)) ] && same_file "$1" "$2"; }

# caught_up: until the standby has replayed the primary's flush LSN (60 s).
caught_up() {
  local lsn n
  lsn=$(on primary -c "SELECT pg_current_wal_flush_lsn()")
  for ((n = 0; n < 300; n++)); do
    [ "$(on standby -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && { echo "standby at $lsn"; return 0; }
    sleep 0.2
  done
  echo "the standby did not replay up to $lsn in 60 s" >&2
  return 1
}

# answers SERVER SETTINGS OUT: ids and distances of the 10 nearest rows of every query.
answers() {
  on primary -c "SELECT format('SELECT %s, id, embedding <-> %L FROM items ORDER BY embedding <-> %L LIMIT 10;', qid, v, v)
    FROM queries ORDER BY qid" > "$work/queries.sql"
  { echo "SET max_parallel_workers_per_gather = 0; $2"; cat "$work/queries.sql"; } | on "$1" -f - > "$3"
}

# search_loop SERVER: searches in chunks of 20 (one psql each) until loops/stop exists; each
# prints its row count to SERVER.out, errors go to SERVER.err.
search_loop() {
  local s=$1 dir=$work/loops i rc chunk=0
  while [ ! -e "$dir/stop" ]; do
    chunk=$((chunk + 1))
    {
      echo "SET hnsw.ef_search = $((chunk % 2 ? 40 : 100));"
      for ((i = 0; i < 20; i++)); do
        echo "SELECT count(*) FROM (SELECT id FROM items
                ORDER BY embedding <-> (SELECT v FROM queries WHERE qid = $((RANDOM % nq + 1))) LIMIT 10) s;"
      done
    } > "$dir/$s.sql"
    rc=0
    PGOPTIONS="-c client_min_messages=warning" timeout 60 "$OURS/bin/psql" -X -q -At -v ON_ERROR_STOP=0 \
      -h "$work/$s" -p "$(port_of_server "$s")" -U postgres -d postgres -f "$dir/$s.sql" \
      >> "$dir/$s.out" 2>> "$dir/$s.err" || rc=$?
    [ "$rc" = 0 ] || echo "psql exit status $rc" >> "$dir/$s.err"
  done
}

rm -rf "$work/primary" "$work/standby" "$work/loops"
mkdir -p "$work/loops"
"$root/scripts/pg-server.sh" start "$OURS/bin" "$work/primary/data" "$primary_port"
on primary -c "CREATE EXTENSION vector" -c "SELECT setseed(0.23)" -c "
  CREATE TABLE items (id bigint PRIMARY KEY, embedding vector($dim));
  INSERT INTO items SELECT i, array(SELECT random() FROM generate_series(1, $dim) WHERE i > 0)
    FROM generate_series(1, $rows) i;
  CREATE TABLE queries (qid int PRIMARY KEY, v vector($dim));
  INSERT INTO queries SELECT q, array(SELECT random() FROM generate_series(1, $dim) WHERE q > 0)
    FROM generate_series(1, $nq) q;
  CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_l2_ops);
  ANALYZE;" >/dev/null
as_postgres "$OURS/bin/pg_basebackup" -h "$work/primary" -p "$primary_port" -U postgres \
  -D "$work/standby/data" -R -X stream -c fast
"$root/scripts/pg-server.sh" start "$OURS/bin" "$work/standby/data" "$standby_port"
echo "-- primary with $rows rows of vector($dim) and an hnsw index; standby with default settings ($(( $(date +%s) - began )) s)"
check "the standby is in recovery, hot_standby_feedback $(on standby -c 'SHOW hot_standby_feedback')" \
  test "$(on standby -c 'SELECT pg_is_in_recovery()')" = t
check "the standby catches up" caught_up
answers primary "" "$work/before_primary.txt"
answers standby "" "$work/before_standby.txt"
check "before the writes: the standby's ids and distances equal the primary's ($nq queries)" \
  same_answers "$work/before_primary.txt" "$work/before_standby.txt"

echo "-- searches on both servers while the primary takes inserts, deletes and a VACUUM"
for s in "${servers[@]}"; do
  : > "$work/loops/$s.out"; : > "$work/loops/$s.err"
  search_loop "$s" &
  loop_pids+=($!)
done
# marks: the search counts so far, one per server.
count_of() { grep -c . "$work/loops/$1.out" || true; }
wait_for_searches() {
  local n s
  for ((n = 0; n < 600; n++)); do
    for s in "${servers[@]}"; do [ "$(count_of "$s")" -ge "$1" ] || { sleep 0.2; continue 2; }; done
    return 0
  done
}
wait_for_searches 20
step() { on primary -c "$2" >/dev/null; echo "$1 (searches so far: primary $(count_of primary), standby $(count_of standby))"; }
for b in 0 1 2 3; do
  step "inserted 300 rows" "SELECT setseed(0.$((b + 4))); INSERT INTO items SELECT i, array(SELECT random() FROM generate_series(1, $dim) WHERE i > 0)
    FROM generate_series($((rows + 1 + b * 300)), $((rows + 300 + b * 300))) i"
done
step "deleted every row with id % 3 = 0" "DELETE FROM items WHERE id % 3 = 0"
step "VACUUM items" "VACUUM items"
for b in 4 5; do
  step "inserted 300 rows" "SELECT setseed(0.$((b + 4))); INSERT INTO items SELECT i, array(SELECT random() FROM generate_series(1, $dim) WHERE i > 0)
    FROM generate_series($((rows + 100001 + b * 300)), $((rows + 100300 + b * 300))) i"
done
# The searches go on a little after the last write, then stop.
wait_for_searches $(( $(count_of primary) + 40 ))
touch "$work/loops/stop"
for p in "${loop_pids[@]}"; do wait "$p" || true; done
loop_pids=()

for s in "${servers[@]}"; do
  n=$(count_of "$s")
  short=$(grep -cvx 10 "$work/loops/$s.out" || true)
  errors=$(grep -c . "$work/loops/$s.err" || true)
  check "$s: $n searches during the writes (at least $min_searches), $short short of 10 rows, $errors stderr lines" \
    test "$n" -ge "$min_searches" -a "$short" = 0 -a "$errors" = 0
  [ "$errors" = 0 ] || sort "$work/loops/$s.err" | uniq -c | sort -rn | head -5
done
conflicts=$(on standby -c "SELECT sum(confl_tablespace + confl_lock + confl_snapshot + confl_bufferpin + confl_deadlock)
  FROM pg_stat_database_conflicts")
check "no search on the standby cancelled by a recovery conflict ($conflicts)" test "$conflicts" = 0

echo "-- after the standby caught up"
check "the standby catches up" caught_up
for ef in 40 100; do
  answers primary "SET hnsw.ef_search = $ef;" "$work/after_primary_$ef.txt"
  answers standby "SET hnsw.ef_search = $ef;" "$work/after_standby_$ef.txt"
  check "hnsw.ef_search = $ef: the standby's ids and distances equal the primary's ($nq queries x 10)" \
    same_answers "$work/after_primary_$ef.txt" "$work/after_standby_$ef.txt"
done
check "no deleted row in the answers" test "$(awk -F'|' '$2 <= '"$rows"' && $2 % 3 == 0' "$work/after_standby_40.txt" | grep -c . || true)" = 0
for s in "${servers[@]}"; do
  check "$s: the search plan is an index scan of items_hnsw" grep -q "Index Scan using items_hnsw" \
    <(on "$s" -c "EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY embedding <-> (SELECT v FROM queries WHERE qid = 1) LIMIT 10")
done
answers primary "SET enable_indexscan = off;" "$work/exact.txt"
recall=$(recall_of_files "$work/after_standby_40.txt" "$work/exact.txt")
echo "recall@10 at hnsw.ef_search = 40 (both servers): $recall"

echo "replica reads: $((checks - failures)) of $checks checks passed, $failures failed; searches during the writes: primary $(count_of primary), standby $(count_of standby); recall@10 $recall ($(( $(date +%s) - began )) s)"
[ "$failures" = 0 ]
