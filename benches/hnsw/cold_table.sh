#!/usr/bin/env bash
# A resident index beside a cold table: what hinting the next rows' table blocks saves when
# only the table misses (the index prewarmed in shared buffers, the table evicted from them
# and the page cache dropped before every batch). Ours with table hints off and on, A/B
# alternated, for hnsw (`hnsw.debug_heap_prefetch`) and ivfflat (`ivfflat.io_method`: with a
# resident index its lists are never hinted, so only the table hints differ).
# TOAST=1 (with DIM=768, whose vectors are stored out of line): the heap and the TOAST index
# are prewarmed with the index and only the TOAST table is cold, the case the TOAST hints are
# for (a small heap that stays in shared buffers beside large, cold vectors).
# Usage: [N=100000] [DIM=384] [QUERIES=500] [ROUNDS=6] [TOAST=1] benches/hnsw/cold_table.sh WORKDIR
# (root: it drops the page cache and runs the server as postgres)
set -euo pipefail
work=$1
n=${N:-100000} dim=${DIM:-384} queries=${QUERIES:-500} rounds=${ROUNDS:-6} toast=${TOAST:-0}
. "$(dirname "$0")/../../tests/lib.sh"
[ -w /proc/sys/vm/drop_caches ] || { echo "needs root (drop_caches)"; exit 2; }

if [ ! -d "$data" ]; then
  start ours
  sql ours -c "ALTER SYSTEM SET shared_buffers = '1GB'" -c "ALTER SYSTEM SET effective_io_concurrency = 16" \
    -c "ALTER SYSTEM SET jit = off"
  stop ours
  start ours
  sql ours <<SQL
CREATE EXTENSION vector;
CREATE EXTENSION vector_rs;
CREATE EXTENSION pg_buffercache;
CREATE EXTENSION pg_prewarm;
SELECT setseed(0.27);
CREATE TABLE items (id int, v vector($dim));
INSERT INTO items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $dim) WHERE i > 0)
  FROM generate_series(1, $n) i;
CREATE TABLE queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $dim)
  WHERE j > 0)::vector($dim) AS v FROM generate_series(1, $queries) j;
SET maintenance_work_mem = '2GB';
CREATE INDEX items_hnsw ON items USING hnsw (v vector_l2_ops);
CREATE INDEX items_ivfflat ON items USING ivfflat (v vector_l2_ops) WITH (lists = 100);
CHECKPOINT;
SQL
else
  start ours
fi
sql ours <<'SQL'
CREATE OR REPLACE FUNCTION table_batch(am text, hints boolean, OUT ms_per_query float8,
  OUT heap_prefetches bigint, OUT checksum bigint) LANGUAGE plpgsql AS $$
DECLARE q record; t0 timestamptz;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('ivfflat.probes', '10', true);
  PERFORM set_config('hnsw.debug_heap_prefetch', hints::text, true);
  PERFORM set_config('ivfflat.io_method', CASE WHEN hints THEN 'prefetch' ELSE 'off' END, true);
  heap_prefetches := 0; checksum := 0;
  t0 := clock_timestamp();
  FOR q IN SELECT * FROM queries ORDER BY id LOOP
    checksum := checksum + (SELECT sum(id) FROM (SELECT id FROM items ORDER BY v <-> q.v LIMIT 10) x);
    heap_prefetches := heap_prefetches + CASE am
      WHEN 'hnsw' THEN (SELECT s.heap_prefetches FROM hnsw_last_scan_stats() s)
      ELSE (SELECT s.heap_prefetches FROM ivfflat_last_scan_stats() s) END;
  END LOOP;
  ms_per_query := extract(epoch FROM clock_timestamp() - t0) * 1000 / (SELECT count(*) FROM queries);
END $$;
SQL
echo "items: $(sql ours -c "SELECT pg_size_pretty(pg_relation_size('items'))"), hnsw:" \
  "$(sql ours -c "SELECT pg_size_pretty(pg_relation_size('items_hnsw'))"), ivfflat:" \
  "$(sql ours -c "SELECT pg_size_pretty(pg_relation_size('items_ivfflat'))")"
results=$work/times
: > "$results"
for am in hnsw ivfflat; do
  # The other index is dropped inside each batch's transaction, rolled back after it.
  other=$([ $am = hnsw ] && echo items_ivfflat || echo items_hnsw)
  for round in $(seq "$rounds"); do
    order="off on"; [ $((round % 2)) = 0 ] && order="on off"
    for hints in $order; do
      sync; echo 3 > /proc/sys/vm/drop_caches
      warm=(-c "SELECT pg_prewarm('items_${am}') > 0" -c "SELECT pg_buffercache_evict_relation('items')")
      if [ "$toast" = 1 ]; then
        warm+=(-c "SELECT pg_prewarm('items') > 0"
          -c "SELECT pg_prewarm(i.indexrelid) > 0 FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid WHERE c.relname = 'items'"
          -c "SELECT pg_buffercache_evict_relation(reltoastrelid) FROM pg_class WHERE relname = 'items'")
      fi
      line=$(sql ours "${warm[@]}" \
        -c "BEGIN" -c "DROP INDEX $other" \
        -c "SELECT ms_per_query, heap_prefetches, checksum FROM table_batch('$am', '$hints')" \
        -c "ROLLBACK" | tail -1)
      echo "$am $hints $round $line" | tee -a "$results"
    done
  done
done
stop ours
python3 - "$results" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list); sums = collections.defaultdict(set)
for line in open(sys.argv[1]):
    am, hints, rnd, rest = line.split(maxsplit=3)
    ms, hp, cs = rest.strip().split('|')
    t[am, hints].append(float(ms)); sums[am].add(cs)
for am in ('hnsw', 'ivfflat'):
    off, on = t[am, 'off'], t[am, 'on']
    ratios = [b / a for a, b in zip(off, on)]
    print(f"{am}: hints off {statistics.mean(off):.3f} ms/query, on {statistics.mean(on):.3f};"
          f" on/off pooled {sum(on) / sum(off):.3f}, per round {', '.join(f'{r:.2f}' for r in ratios)};"
          f" same rows in every run: {len(sums[am]) == 1}")
PY
