#!/usr/bin/env bash
# Crash recovery of ivfflat's WAL: the server is killed (pg_ctl -m immediate) while several
# sessions insert into an ivfflat index and another deletes and vacuums, then restarted.
#  1. Table c (vector(12)) with 3,000 rows and an ivfflat index (20 lists); an unlogged table
#     u with an index (its INIT fork comes from ambuildempty).
#  2. Four sessions insert one row per transaction, one deletes rows and runs VACUUM in a loop,
#     one inserts into u. After a few seconds: immediate shutdown.
#  3. After recovery: an exact scan (probes = lists) returns exactly the table's rows (none lost,
#     none extra, none duplicated); a 13th of the rows, looked up by their own value at
#     probes = 1, are in the list of their nearest center; a VACUUM
#     and more inserts keep that true; pristine pgvector 0.8.6 answers identically on the
#     recovered index. The unlogged table is empty and its index works.
# Usage: tests/ivfflat/crash_recovery.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, CRASH_AFTER)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/ivfflat-crash.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
seconds=${CRASH_AFTER:-3}

as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
value="array(SELECT round(random()::numeric, 3)::real FROM generate_series(1, 12) WHERE i > 0)"

start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.3)" -c "
  CREATE TABLE c (id int, v vector(12));
  INSERT INTO c SELECT i, $value FROM generate_series(1, 3000) i;
  CREATE INDEX c_idx ON c USING ivfflat (v vector_l2_ops) WITH (lists = 20);
  CREATE UNLOGGED TABLE u (id int, v vector(12));
  INSERT INTO u SELECT i, $value FROM generate_series(1, 500) i;
  CREATE INDEX u_idx ON u USING ivfflat (v vector_l2_ops) WITH (lists = 5);" >/dev/null

echo "-- concurrent inserts, deletes and vacuums, then an immediate shutdown after ${seconds}s"
pids=()
for s in 1 2 3 4; do
  python3 -c "
for i in range(1, 100001):
    print(\"INSERT INTO c SELECT $((s * 1000000)) + {0}, array(SELECT round(random()::numeric, 3)::real FROM generate_series(1, 12) WHERE {0} > 0);\".format(i))
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
    print(\"INSERT INTO u SELECT {0}, array(SELECT random()::real FROM generate_series(1, 12) WHERE {0} > 0);\".format(i))
" > "$work/unlogged.sql"
sql ours -f "$work/unlogged.sql" > /dev/null 2>&1 &
pids+=($!)
sleep "$seconds"
before=$(sql ours -c "SELECT count(*) FROM c")
as_postgres "$OURS/bin/pg_ctl" -D "$data" -m immediate stop > /dev/null
for p in "${pids[@]}"; do wait "$p" || true; done
echo "   about $before rows when the server was killed"

# consistent LIB: the exact scan returns each row once; every row finds itself.
consistent() {
  local rows indexed distinct lost
  rows=$(sql "$1" -c "SELECT count(*) FROM c")
  indexed=$(sql "$1" -c "SET enable_seqscan = off; SET ivfflat.probes = 20;
    SELECT count(*) FROM (SELECT id FROM c ORDER BY v <-> '[0,0,0,0,0,0,0,0,0,0,0,0]') s")
  distinct=$(sql "$1" -c "SET enable_seqscan = off; SET ivfflat.probes = 20;
    SELECT count(DISTINCT id) FROM (SELECT id FROM c ORDER BY v <-> '[0,0,0,0,0,0,0,0,0,0,0,0]') s")
  [ "$indexed" = "$rows" ] || fail "$2: the index returns $indexed rows, the table has $rows"
  [ "$distinct" = "$rows" ] || fail "$2: the index returns $distinct distinct rows of $rows"
  # At probes = 1 a row's own value leads to the list of its nearest center, where the
  # insert put it: each row is in its list.
  lost=$(sql "$1" -c "SET enable_seqscan = off; SET ivfflat.probes = 1;
    SELECT count(*) FROM c WHERE id % 13 = 0 AND NOT EXISTS (
      SELECT 1 FROM (SELECT c2.id FROM c c2 ORDER BY c2.v <-> c.v LIMIT 20) s WHERE s.id = c.id)")
  [ "$lost" = 0 ] || fail "$2: $lost rows are not in the list of their nearest center"
  local verified=""
  if [ "$1" = ours ]; then
    sql ours -c "SELECT ivfflat_index_parent_check('c_idx', true)" >/dev/null
    verified="; verifier clean"
  fi
  echo "   $2: $rows rows, each once in the index; a 13th of them looked up: each in its nearest center's list$verified"
}

echo "-- recovery"
running=""
start ours
rows=$(sql ours -c "SELECT count(*) FROM c")
[ "$rows" -gt 3000 ] || fail "no insert was committed before the crash"
consistent ours "after recovery"
sql ours -c "VACUUM c"
consistent ours "after VACUUM"
sql ours -c "INSERT INTO c SELECT 9000000 + i, $value FROM generate_series(1, 500) i"
consistent ours "after inserts"
snapshot=$(sql ours -c "SET enable_seqscan = off; SET ivfflat.probes = 4;
  SELECT md5(string_agg(array(SELECT t.id FROM c t ORDER BY t.v <-> q.v LIMIT 10)::text, ';' ORDER BY q.id))
  FROM (SELECT * FROM c WHERE id % 50 = 0) q")

n=$(sql ours -c "SELECT count(*) FROM u")
[ "$n" = 0 ] || fail "the unlogged table kept $n rows"
sql ours -c "INSERT INTO u SELECT i, $value FROM generate_series(1, 300) i"
found=$(sql ours -c "SET enable_seqscan = off; SET ivfflat.probes = 5;
  SELECT count(*) FROM (SELECT id FROM u ORDER BY v <-> (SELECT v FROM u WHERE id = 5) LIMIT 1) s WHERE id = 5")
[ "$found" = 1 ] || fail "the unlogged table's index does not find its rows"
echo "   unlogged table: empty after recovery, its index works"
stop ours

start pgvector
consistent pgvector "read by pgvector 0.8.6"
other=$(sql pgvector -c "SET enable_seqscan = off; SET ivfflat.probes = 4;
  SELECT md5(string_agg(array(SELECT t.id FROM c t ORDER BY t.v <-> q.v LIMIT 10)::text, ';' ORDER BY q.id))
  FROM (SELECT * FROM c WHERE id % 50 = 0) q")
[ "$other" = "$snapshot" ] || fail "pgvector answers differently on the recovered index"
stop pgvector
echo "OK: consistent after crash recovery, identical on pgvector ($work)"
