#!/usr/bin/env bash
# Resident latency of two builds of the library on the same data directory, so that both
# walk the same graph: the server is restarted on installation A, then B, alternating the
# order every round; each run prewarms index and table into shared_buffers (1GB), warms up
# with 50 queries, then times 600 (one session, PL/pgSQL loop, clock_timestamp).
# MODE=build times a serial REINDEX of INDEX instead (maintenance_work_mem 1GB; ms per build).
# Usage: [MODE=search|build] [INDEX=items_hnsw] [OP='<->'] [SETTINGS='SET hnsw.ef_search = 40;']
#        benches/hnsw/swap_library.sh DATADIR DATABASE INSTALL_A INSTALL_B [ROUNDS]
# (DATADIR: a cluster with tables items(embedding) + queries(id, embedding) and the index INDEX
# on items for the operator OP, such as cold.py's workdir/ours/data or peers.py's
# workdir/servers/KEY/data with INDEX=items_idx OP='<=>'; the server must be stopped.)
set -euo pipefail
data=$1 db=$2 a=$3 b=$4 rounds=${5:-8}
index=${INDEX:-items_hnsw} op=${OP:-<->} settings=${SETTINGS:-} mode=${MODE:-search}
sock=$(mktemp -d /tmp/swap-library.XXXXXX)
chmod 777 "$sock"
as_pg() { runuser -u postgres -- "$@"; }
run() {
  as_pg "$1/bin/pg_ctl" -D "$data" -w -l "$sock/server.log" \
    -o "-p 55803 -k $sock -c shared_buffers=1GB -c listen_addresses= -c jit=off" start >/dev/null
  if [ "$mode" = build ]; then
    "$1/bin/psql" -X -q -At -h "$sock" -p 55803 -U postgres -d "$db" <<SQL
SET maintenance_work_mem = '1GB';
SET max_parallel_maintenance_workers = 0;
$settings
SELECT clock_timestamp() AS t0 \\gset
REINDEX INDEX $index;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric * 1000, 1);
SQL
  else
  "$1/bin/psql" -X -q -At -h "$sock" -p 55803 -U postgres -d "$db" <<SQL
CREATE EXTENSION IF NOT EXISTS pg_prewarm;
SELECT pg_prewarm('$index') > 0 AND pg_prewarm('items') > 0 AS warm \\gset
SET enable_seqscan = off;
$settings
DO \$\$ DECLARE r record; x int[]; BEGIN
  FOR r IN SELECT * FROM queries WHERE id <= 50 LOOP
    x := array(SELECT id FROM items ORDER BY embedding $op r.embedding LIMIT 10);
  END LOOP; END \$\$;
CREATE TEMP TABLE tm (ms float8);
DO \$\$ DECLARE r record; x int[]; t0 timestamptz; BEGIN
  FOR r IN SELECT * FROM queries WHERE id > 100 AND id <= 700 ORDER BY id LOOP
    t0 := clock_timestamp();
    x := array(SELECT id FROM items ORDER BY embedding $op r.embedding LIMIT 10);
    INSERT INTO tm VALUES (extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP; END \$\$;
SELECT round(avg(ms)::numeric, 4) FROM tm;
SQL
  fi
  as_pg "$1/bin/pg_ctl" -D "$data" -w -m fast stop >/dev/null
}
sum_a=0 sum_b=0
for i in $(seq 1 "$rounds"); do
  if [ $((i % 2)) = 1 ]; then ta=$(run "$a" 2>/dev/null | tail -1); tb=$(run "$b" 2>/dev/null | tail -1)
  else tb=$(run "$b" 2>/dev/null | tail -1); ta=$(run "$a" 2>/dev/null | tail -1); fi
  echo "round $i: A $ta ms, B $tb ms, A/B $(python3 -c "print(round($ta / $tb, 3))")"
  sum_a=$(python3 -c "print($sum_a + $ta)"); sum_b=$(python3 -c "print($sum_b + $tb)")
done
echo "pooled: A $(python3 -c "print(round($sum_a / $rounds, 4))") ms, B $(python3 -c "print(round($sum_b / $rounds, 4))") ms, A/B $(python3 -c "print(round($sum_a / $sum_b, 3))")"
