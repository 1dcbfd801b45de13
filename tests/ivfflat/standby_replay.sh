#!/usr/bin/env bash
# WAL replay of ivfflat (and hnsw) indexes on a streaming standby.
#  1. A primary on our library; tables of vectors, halfvecs and bits; a standby made from a base
#     backup taken before any index exists, so every index page reaches it through WAL.
#  2. On the primary: serial and parallel builds, an unlogged table's index, inserts that grow
#     the lists past their first pages, deletes and VACUUM, REINDEX CONCURRENTLY, CREATE INDEX
#     CONCURRENTLY.
#  3. Once the standby has replayed the primary's last WAL position: every index page on the
#     standby equals the primary's (the checksum field masked: it is set when a page is
#     written out); the standby answers every query as the primary does at probes 1, 7 and
#     lists (exact, and equal to a sequential scan there), with an iterative scan and a filter.
#  4. Writes, and reads of the unlogged table, are refused on the standby with Postgres's
#     errors; the unlogged table's index works on the primary.
# Usage: tests/ivfflat/standby_replay.sh [WORKDIR]   (OURS=..., PORT_OURS, PORT_STANDBY)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/ivfflat-standby.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster" "$work/standby"
standby_data=$work/standby/data
standby_port=${PORT_STANDBY:-55513}
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

standby_sql() {
  PGOPTIONS=${PGOPTIONS:--c client_min_messages=warning} "$OURS/bin/psql" -X -q -At -v ON_ERROR_STOP=1 \
    -h "$work/standby" -p "$standby_port" -U postgres -d postgres "$@"
}
primary_sql() { sql ours "$@"; }
stop_standby() { "$root/scripts/pg-server.sh" stop "$OURS/bin" "$standby_data"; }
trap 'stop_standby 2>/dev/null; cleanup_servers' EXIT
# wait_for_replay: until the standby has replayed the primary's current WAL position (60 s).
wait_for_replay() {
  local lsn
  lsn=$(sql ours -c "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 300); do
    [ "$(standby_sql -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
    sleep 0.2
  done
  [ "$(standby_sql -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] ||
    fail "the standby did not replay up to $lsn"
  echo "-- standby replayed up to $lsn"
}

start ours
sql ours -c "CREATE EXTENSION vector" -c "SELECT setseed(0.7)" -c "
  CREATE TABLE v (id int PRIMARY KEY, e vector(16), cat int);
  CREATE TABLE h (id int PRIMARY KEY, e halfvec(16));
  CREATE TABLE b (id int PRIMARY KEY, e bit(64));
  CREATE UNLOGGED TABLE u (id int, e vector(4));
  CREATE TABLE queries (id int, v vector(16));
  INSERT INTO queries SELECT q, array(SELECT random() FROM generate_series(1, 16) WHERE q > 0)
    FROM generate_series(1, 40) q;" >/dev/null

echo "-- base backup before any index, standby streaming from the primary"
as_postgres "$OURS/bin/pg_basebackup" -h "$work/cluster" -p "$PORT_OURS" -U postgres \
  -D "$standby_data" -R -X stream -c fast
mkdir -p "$work/standby"; [ "$(id -u)" = 0 ] && chown postgres "$work/standby"
"$root/scripts/pg-server.sh" start "$OURS/bin" "$standby_data" "$standby_port"
[ "$(standby_sql -c 'SELECT pg_is_in_recovery()')" = t ] || fail "the standby is not in recovery"

# rows_sql V_FROM V_TO HB_FROM HB_TO: inserts of random rows with those ids into v, and into h and b.
rows_sql() {
  echo "INSERT INTO v SELECT i, array(SELECT random() FROM generate_series(1, 16) WHERE i > 0), i % 5
    FROM generate_series($1, $2) i;
  INSERT INTO h SELECT i, array(SELECT random() FROM generate_series(1, 16) WHERE i > 0)::halfvec
    FROM generate_series($3, $4) i;
  INSERT INTO b SELECT i, (random() * 9e18)::int8::bit(64) FROM generate_series($3, $4) i;"
}

echo "-- builds, inserts, deletes, VACUUM, REINDEX CONCURRENTLY, CREATE INDEX CONCURRENTLY"
sql ours -c "SELECT setseed(0.2)" -c "$(rows_sql 1 6000 1 3000)
  INSERT INTO u SELECT i, array[i, 1, 2, 3] FROM generate_series(1, 200) i;
  CREATE INDEX v_l2 ON v USING ivfflat (e vector_l2_ops) WITH (lists = 40);
  ALTER TABLE v SET (parallel_workers = 2);
  SET max_parallel_maintenance_workers = 2;
  CREATE INDEX v_ip ON v USING ivfflat (e vector_ip_ops) WITH (lists = 25);
  RESET max_parallel_maintenance_workers;
  CREATE INDEX h_cos ON h USING ivfflat (e halfvec_cosine_ops) WITH (lists = 20);
  CREATE INDEX b_ham ON b USING ivfflat (e bit_hamming_ops) WITH (lists = 10);
  CREATE INDEX u_l2 ON u USING ivfflat (e vector_l2_ops) WITH (lists = 4);
  CREATE INDEX h_hnsw ON h USING hnsw (e halfvec_l2_ops) WITH (m = 8, ef_construction = 32);" >/dev/null
sql ours -c "SELECT setseed(0.4)" -c "$(rows_sql 6001 12000 3001 5000)
  DELETE FROM v WHERE id % 3 = 0;
  DELETE FROM h WHERE id % 4 = 0;
  DELETE FROM b WHERE id % 5 = 0;" >/dev/null
sql ours -c "VACUUM v" -c "VACUUM h" -c "VACUUM b"
sql ours -c "INSERT INTO v SELECT i, array(SELECT random() FROM generate_series(1, 16) WHERE i > 0), i % 5
    FROM generate_series(12001, 13000) i" \
  -c "REINDEX INDEX CONCURRENTLY h_cos" \
  -c "CREATE INDEX CONCURRENTLY v_cos ON v USING ivfflat (e vector_cosine_ops) WITH (lists = 15)"

wait_for_replay

# page_digests SQLFN INDEX: one line per block, the page with its checksum bytes (8-9) masked.
page_digests="SELECT b, md5(overlay(get_raw_page(\$1, b) PLACING '\\x0000'::bytea FROM 9 FOR 2))
  FROM generate_series(0, pg_relation_size(\$1::regclass) / 8192 - 1) b"
sql ours -c "CREATE EXTENSION pageinspect" >/dev/null
wait_for_replay
for index in v_l2 v_ip v_cos h_cos b_ham h_hnsw; do
  sql ours -c "CHECKPOINT" >/dev/null
  primary=$(sql ours -c "PREPARE d(text) AS $page_digests" -c "EXECUTE d('$index')")
  replica=$(standby_sql -c "PREPARE d(text) AS $page_digests" -c "EXECUTE d('$index')")
  pages=$(echo "$primary" | wc -l)
  [ "$pages" -gt 2 ] || fail "$index: only $pages pages"
  [ "$primary" = "$replica" ] || {
    diff <(echo "$primary") <(echo "$replica") | head -5 || true
    fail "$index: standby pages differ from the primary's"
  }
  echo "$index: $pages pages identical on the standby"
done

# answers LIB-SQL TABLE OPERATOR SETTINGS: the 10 nearest ids of every query, one line each.
answers() {
  local run=$1 table=$2 op=$3 settings=$4 cast=$5
  "$run" -c "SET enable_seqscan = off; $settings" -c "
    SELECT q.id, array(SELECT t.id FROM $table t ORDER BY t.e $op q.v::$cast LIMIT 10)
      FROM queries q ORDER BY q.id"
}
bits="(SELECT string_agg(CASE WHEN x > 0.5 THEN '1' ELSE '0' END, '') FROM unnest(q.v::real[]) x)"
compared=0
for setting in "SET ivfflat.probes = 1;" "SET ivfflat.probes = 7;" "SET ivfflat.probes = 40;" \
  "SET ivfflat.iterative_scan = relaxed_order; SET ivfflat.max_probes = 40;"; do
  for spec in "v <-> vector" "v <#> vector" "v <=> vector" "h <=> halfvec"; do
    set -- $spec
    p=$(answers primary_sql "$1" "$2" "$setting" "$3")
    s=$(answers standby_sql "$1" "$2" "$setting" "$3")
    [ -n "$p" ] && [ "$p" = "$s" ] || fail "$spec, $setting: the standby answers differently"
    compared=$((compared + 1))
  done
  p=$(sql ours -c "SET enable_seqscan = off; $setting" -c "
    SELECT q.id, array(SELECT t.id FROM b t ORDER BY t.e <~> ($bits::bit(16) || repeat('0', 48)::bit(48)) LIMIT 10)
      FROM queries q ORDER BY q.id" 2>&1 || true)
  s=$(standby_sql -c "SET enable_seqscan = off; $setting" -c "
    SELECT q.id, array(SELECT t.id FROM b t ORDER BY t.e <~> ($bits::bit(16) || repeat('0', 48)::bit(48)) LIMIT 10)
      FROM queries q ORDER BY q.id" 2>&1 || true)
  [ -n "$p" ] && [ "$p" = "$s" ] || fail "bit, $setting: the standby answers differently"
  compared=$((compared + 1))
done
echo "$compared query sets answered identically on the standby"

echo "-- exact at probes = lists on the standby, filtered iterative scan"
exact=$(answers standby_sql v "<->" "SET ivfflat.probes = 40;" vector)
seq=$(standby_sql -c "SET enable_indexscan = off; SET enable_bitmapscan = off" -c "
  SELECT q.id, array(SELECT t.id FROM v t ORDER BY t.e <-> q.v LIMIT 10) FROM queries q ORDER BY q.id")
[ "$exact" = "$seq" ] || fail "probes = lists on the standby differs from a sequential scan"
filtered=$(standby_sql -c "SET enable_seqscan = off; SET ivfflat.iterative_scan = relaxed_order;
  SET ivfflat.probes = 1; SET ivfflat.max_probes = 40" -c "
  SELECT count(*) FROM (SELECT id FROM v WHERE cat = 3 ORDER BY e <-> (SELECT v FROM queries WHERE id = 1) LIMIT 200) s")
[ "$filtered" = 200 ] || fail "iterative scan with a filter on the standby returned $filtered rows, not 200"

echo "-- the standby refuses writes and unlogged tables"
err=$(standby_sql -c "INSERT INTO v VALUES (0, array_fill(0, ARRAY[16])::vector, 0)" 2>&1 || true)
echo "$err" | grep -q "cannot execute INSERT in a read-only transaction" || fail "standby insert: $err"
err=$(standby_sql -c "SELECT count(*) FROM u" 2>&1 || true)
echo "$err" | grep -q "cannot access temporary or unlogged relations during recovery" ||
  fail "standby unlogged read: $err"
[ "$(sql ours -c "SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM u ORDER BY e <-> '[1,1,2,3]' LIMIT 5) s")" = 5 ] ||
  fail "the primary's unlogged index"
echo "standby replay: ok"
