#!/usr/bin/env bash
# Overlapped reads change nothing but time: with every hnsw.io_method and look-ahead setting,
# 2,000 queries against an index larger than shared_buffers return the same ids in the same
# order, ask for the same blocks (hits + reads), and read the same total number of index
# blocks into shared buffers. Cursors closed early, LIMIT and an error in the middle of a scan
# leave no buffer pinned.
# Usage: tests/hnsw/io_identical.sh WORKDIR   (about 2 minutes)
set -euo pipefail
work=${1:?workdir}
source "$(dirname "$0")/../lib.sh"

start ours
# An index about twice the size of shared_buffers, so that queries read and evict.
sql ours -c "ALTER SYSTEM SET shared_buffers = '16MB'" -c "ALTER SYSTEM SET effective_io_concurrency = 16"
stop ours
start ours

sql ours <<'SQL'
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
SELECT setseed(0.31);
CREATE TABLE items (id int, v vector(96));
INSERT INTO items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 96) WHERE i > 0)
  FROM generate_series(1, 30000) i;
CREATE TABLE queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 96)
  WHERE j > 0)::vector(96) AS v FROM generate_series(1, 2000) j;
SET maintenance_work_mem = '256MB';
CREATE INDEX items_idx ON items USING hnsw (v vector_l2_ops);
CREATE TABLE runs (cfg text, qid int, ids int[], blocks bigint, hits bigint, reads bigint,
  prefetched bigint, heap_prefetches bigint);
-- Runs every query with one setting; returns the index blocks read into shared buffers.
CREATE FUNCTION run_all(cfg text, method text, lookahead int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE q record; ids int[]; s record; before bigint;
BEGIN
  PERFORM set_config('hnsw.io_method', method, true);
  PERFORM set_config('hnsw.prefetch_lookahead', lookahead::text, true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM pg_buffercache_evict_relation('items_idx');
  PERFORM pg_buffercache_evict_relation('items');
  SELECT sum(reads) INTO before FROM runs WHERE false;
  FOR q IN SELECT * FROM queries ORDER BY id LOOP
    ids := array(SELECT id FROM items ORDER BY v <-> q.v LIMIT 10);
    SELECT * INTO s FROM hnsw_last_scan_stats();
    INSERT INTO runs VALUES (cfg, q.id, ids, s.blocks, s.hits, s.reads, s.prefetched,
      s.heap_prefetches);
  END LOOP;
  RETURN (SELECT sum(reads) FROM runs WHERE runs.cfg = run_all.cfg);
END $$;
SQL

configs=("off off 0" "prefetch0 prefetch 0" "prefetch2 prefetch 2" "prefetch8 prefetch 8"
  "stream0 read_stream 0" "stream2 read_stream 2" "stream8 read_stream 8")
# Reads that come from the kernel's page cache are read plainly: drop it before each run
# (root only) so that the walks really overlap device reads.
dropped=0
for c in "${configs[@]}"; do
  set -- $c
  if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; dropped=1; fi
  reads=$(sql ours -c "SELECT run_all('$1', '$2', $3)")
  echo "$1: $reads index blocks read"
done

# Same ids in the same order, same blocks asked for, every block a hit or a read.
differ=$(sql ours -c "SELECT count(*) FROM runs r JOIN runs b USING (qid)
  WHERE b.cfg = 'off' AND (r.ids IS DISTINCT FROM b.ids OR r.blocks <> b.blocks)")
[ "$differ" = 0 ] || fail "$differ query runs differ from io_method = off"
unbalanced=$(sql ours -c "SELECT count(*) FROM runs WHERE hits + reads <> blocks")
[ "$unbalanced" = 0 ] || fail "$unbalanced runs where hits + reads <> blocks"
# Hints never fill shared buffers: every setting reads about as many blocks into them. (Not
# exactly as many: with an index twice the size of shared_buffers, a stream's pins on the
# blocks it reads ahead change which buffers the clock sweep evicts.)
spread=$(sql ours -c "SELECT count(*) FROM (SELECT cfg, sum(reads) AS total FROM runs GROUP BY cfg) t,
  (SELECT sum(reads) AS total FROM runs WHERE cfg = 'off') o WHERE abs(t.total - o.total) > 0.02 * o.total")
[ "$spread" = 0 ] || {
  sql ours -c "SELECT cfg, sum(reads) FROM runs GROUP BY cfg"
  fail "$spread settings read more than 2% more or fewer blocks than io_method = off"
}
nulls=$(sql ours -c "SELECT count(*) FROM runs WHERE blocks IS NULL OR ids IS NULL")
[ "$nulls" = 0 ] || fail "$nulls runs without statistics"
cold=$(sql ours -c "SELECT sum(reads) FROM runs WHERE cfg = 'off'")
[ "$cold" -gt 10000 ] || fail "only $cold blocks read: the test did not run cold"
if [ "$dropped" = 1 ]; then
  for cfg in prefetch0 stream0; do
    overlapped=$(sql ours -c "SELECT sum(prefetched) FROM runs WHERE cfg = '$cfg'")
    [ "$overlapped" -gt 0 ] || fail "$cfg prefetched nothing after the page cache was dropped"
    table=$(sql ours -c "SELECT sum(heap_prefetches) FROM runs WHERE cfg = '$cfg'")
    [ "$table" -gt 0 ] || fail "$cfg asked for no table block ahead of its rows, cold"
  done
fi
none=$(sql ours -c "SELECT sum(prefetched) FROM runs WHERE cfg = 'off'")
[ "$none" = 0 ] || fail "io_method = off prefetched $none reads"
none=$(sql ours -c "SELECT sum(heap_prefetches) FROM runs WHERE cfg = 'off'")
[ "$none" = 0 ] || fail "io_method = off prefetched $none table blocks"
echo "ids, blocks and reads identical across ${#configs[@]} settings x 2000 queries"

# No buffer stays pinned after LIMIT, a cursor closed early, or an error mid-scan (checked in
# the same session: a backend's pins go away when it exits).
for method in read_stream prefetch; do
  out=$(sql ours 2>&1 <<SQL || true
\set ON_ERROR_STOP 0
SET hnsw.io_method = $method;
SET enable_seqscan = off;
CREATE TEMP VIEW pinned AS SELECT 'pinned ' || count(*) FROM pg_buffercache
  WHERE relfilenode = pg_relation_filenode('items_idx') AND pinning_backends > 0;
SELECT pg_buffercache_evict_relation('items_idx') IS NOT NULL;
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM items ORDER BY v <-> (SELECT v FROM queries WHERE id = 7);
FETCH 3 FROM c;
CLOSE c;
COMMIT;
SELECT * FROM pinned;
SELECT pg_buffercache_evict_relation('items_idx') IS NOT NULL;
SET hnsw.iterative_scan = relaxed_order;
SELECT count(*) FROM (SELECT id FROM items ORDER BY v <-> (SELECT v FROM queries WHERE id = 8) LIMIT 300) s;
SELECT * FROM pinned;
SELECT pg_buffercache_evict_relation('items_idx') IS NOT NULL;
SELECT id FROM items WHERE 1 / (id % 2) > 0 ORDER BY v <-> (SELECT v FROM queries WHERE id = 9) LIMIT 50;
SELECT * FROM pinned;
SQL
)
  grep -q "division by zero" <<<"$out" || fail "$method: the error mid-scan was not raised: $out"
  ! grep -qi "leak\|not closed\|warning" <<<"$out" || fail "$method: $out"
  [ "$(grep -c '^pinned 0$' <<<"$out")" = 3 ] || fail "$method: index buffers left pinned: $out"
done
echo "no pins left after cursors, LIMIT and errors"
