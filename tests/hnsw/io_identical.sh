#!/usr/bin/env bash
# Overlapped reads change nothing but time: with every hnsw.io_method and look-ahead setting,
# 2,000 queries against an index larger than shared_buffers return the same ids in the same
# order, ask for the same blocks (hits + reads), and read the same total number of index
# blocks into shared buffers. Cursors closed early, LIMIT and an error in the middle of a scan
# leave no buffer pinned.
# Parameters (io_identical_quantized.sh sets them for a quantized index): HNSW_OPTIONS (added to
# the index's WITH), IO_ROWS (30000), IO_DIMS (96), IO_QUERIES (2000), IO_SHARED_BUFFERS
# (16MB), MIN_COLD_READS (10000: the blocks the cold run of io_method = off must read) and
# IO_EXTRA_CONFIGS: more settings, "NAME METHOD LOOKAHEAD EIC WARM" each (EIC: the session's
# effective_io_concurrency; WARM 1: neither the page cache nor shared buffers are emptied
# before the run, so it reads what the run before it left cached). Warm runs must give the
# same ids and ask for the same blocks, but are left out of the comparison of blocks read.
# With a quantized index, the first 100 queries of every setting also run under EXPLAIN
# (ANALYZE, HNSW): every setting must rerank the same number of candidates from the same
# number of vector blocks.
# Usage: tests/hnsw/io_identical.sh WORKDIR   (about 2 minutes)
set -euo pipefail
work=${1:?workdir}
source "$(dirname "$0")/../lib.sh"
rows=${IO_ROWS:-30000}
dims=${IO_DIMS:-96}
nqueries=${IO_QUERIES:-2000}
options=${HNSW_OPTIONS:-}
quantized=0
case $options in *quantization*) quantized=1 ;; esac
rm -rf "$work/cluster"

start ours
# An index about twice the size of shared_buffers, so that queries read and evict.
sql ours -c "ALTER SYSTEM SET shared_buffers = '${IO_SHARED_BUFFERS:-16MB}'" -c "ALTER SYSTEM SET effective_io_concurrency = 16"
stop ours
start ours

sql ours <<SQL
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS vector_rs;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
CREATE EXTENSION IF NOT EXISTS pageinspect;
SELECT setseed(0.31);
CREATE TABLE items (id int, v vector($dims));
INSERT INTO items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $dims) WHERE i > 0)
  FROM generate_series(1, $rows) i;
CREATE TABLE queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $dims)
  WHERE j > 0)::vector($dims) AS v FROM generate_series(1, $nqueries) j;
SET maintenance_work_mem = '256MB';
CREATE INDEX items_idx ON items USING hnsw (v vector_l2_ops) ${options:+WITH ($options)};
SQL
sql ours <<'SQL'
CREATE TABLE runs (cfg text, qid int, ids int[], blocks bigint, hits bigint, reads bigint,
  prefetched bigint, heap_prefetches bigint);
CREATE TABLE reranks (cfg text, qid int, reranked bigint, rerank_blocks bigint);
-- Runs every query with one setting; returns the index blocks read into shared buffers.
-- A quantized index's first 100 queries also run under EXPLAIN (ANALYZE, HNSW) for the
-- rerank's counters.
CREATE FUNCTION run_all(cfg text, method text, lookahead int, eic int, warm bool, quantized bool)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE q record; ids int[]; s record; plan json; node json;
BEGIN
  PERFORM set_config('hnsw.io_method', method, true);
  PERFORM set_config('hnsw.prefetch_lookahead', lookahead::text, true);
  PERFORM set_config('effective_io_concurrency', eic::text, true);
  PERFORM set_config('enable_seqscan', 'off', true);
  IF NOT warm THEN
    PERFORM pg_buffercache_evict_relation('items_idx');
    PERFORM pg_buffercache_evict_relation('items');
  END IF;
  FOR q IN SELECT * FROM queries ORDER BY id LOOP
    ids := array(SELECT id FROM items ORDER BY v <-> q.v LIMIT 10);
    SELECT * INTO s FROM hnsw_last_scan_stats();
    INSERT INTO runs VALUES (cfg, q.id, ids, s.blocks, s.hits, s.reads, s.prefetched,
      s.heap_prefetches);
  END LOOP;
  IF quantized THEN
    FOR q IN SELECT * FROM queries WHERE id <= 100 ORDER BY id LOOP
      EXECUTE 'EXPLAIN (ANALYZE, HNSW, FORMAT JSON) SELECT id FROM items ORDER BY v <-> $1 LIMIT 10'
        INTO plan USING q.v;
      node := plan -> 0 -> 'Plan' -> 'Plans' -> 0 -> 'HNSW';
      INSERT INTO reranks VALUES (cfg, q.id, (node ->> 'Reranked')::bigint,
        (node ->> 'Rerank Blocks')::bigint);
    END LOOP;
  END IF;
  RETURN (SELECT sum(reads) FROM runs WHERE runs.cfg = run_all.cfg);
END $$;
SQL
if [ "$quantized" = 1 ]; then
  magic=$(sql ours -c "SELECT encode(substring(get_raw_page('items_idx', 0) FROM 25 FOR 4), 'hex')")
  [ "$magic" = dec053a9 ] || fail "items_idx is not quantized (metapage magic $magic)"
fi
size=$(sql ours -c "SELECT pg_relation_size('items_idx') > pg_size_bytes(current_setting('shared_buffers'))")
[ "$size" = t ] || fail "the index is not larger than shared_buffers: $(sql ours -c "SELECT pg_size_pretty(pg_relation_size('items_idx'))")"

configs=("off off 0" "prefetch0 prefetch 0" "prefetch2 prefetch 2" "prefetch8 prefetch 8"
  "stream0 read_stream 0" "stream2 read_stream 2" "stream8 read_stream 8")
[ -z "${IO_EXTRA_CONFIGS:-}" ] || mapfile -t -O ${#configs[@]} configs <<< "$IO_EXTRA_CONFIGS"
# Reads that come from the kernel's page cache are read plainly: drop it before each run
# (root only) so that the walks really overlap device reads.
dropped=0 warm_runs=()
for c in "${configs[@]}"; do
  set -- $c
  warm=${5:-0}
  if [ "$warm" = 1 ]; then
    warm_runs+=("'$1'")
  elif [ -w /proc/sys/vm/drop_caches ]; then
    sync; echo 3 > /proc/sys/vm/drop_caches; dropped=1
  fi
  reads=$(sql ours -c "SELECT run_all('$1', '$2', $3, ${4:-16}, $([ "$warm" = 1 ] && echo true || echo false), $([ "$quantized" = 1 ] && echo true || echo false))")
  echo "$1: $reads index blocks read$([ "$warm" = 1 ] && echo " (warm)")"
done
warm_list=$(IFS=,; echo "${warm_runs[*]}")
cold_only="cfg NOT IN (${warm_list:-''})"

# Same ids in the same order, same blocks asked for, every block a hit or a read.
differ=$(sql ours -c "SELECT count(*) FROM runs r JOIN runs b USING (qid)
  WHERE b.cfg = 'off' AND (r.ids IS DISTINCT FROM b.ids OR r.blocks <> b.blocks)")
[ "$differ" = 0 ] || fail "$differ query runs differ from io_method = off"
unbalanced=$(sql ours -c "SELECT count(*) FROM runs WHERE hits + reads <> blocks")
[ "$unbalanced" = 0 ] || fail "$unbalanced runs where hits + reads <> blocks"
# Hints never fill shared buffers: every setting reads about as many blocks into them. (Not
# exactly as many: with an index twice the size of shared_buffers, a stream's pins on the
# blocks it reads ahead change which buffers the clock sweep evicts.)
spread=$(sql ours -c "SELECT count(*) FROM (SELECT cfg, sum(reads) AS total FROM runs WHERE $cold_only GROUP BY cfg) t,
  (SELECT sum(reads) AS total FROM runs WHERE cfg = 'off') o WHERE abs(t.total - o.total) > 0.02 * o.total")
[ "$spread" = 0 ] || {
  sql ours -c "SELECT cfg, sum(reads) FROM runs GROUP BY cfg"
  fail "$spread settings read more than 2% more or fewer blocks than io_method = off"
}
nulls=$(sql ours -c "SELECT count(*) FROM runs WHERE blocks IS NULL OR ids IS NULL")
[ "$nulls" = 0 ] || fail "$nulls runs without statistics"
cold=$(sql ours -c "SELECT sum(reads) FROM runs WHERE cfg = 'off'")
[ "$cold" -gt "${MIN_COLD_READS:-10000}" ] || fail "only $cold blocks read: the test did not run cold"
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
echo "ids, blocks and reads identical across ${#configs[@]} settings x $nqueries queries"
if [ "$quantized" = 1 ]; then
  differ=$(sql ours -c "SELECT count(*) FROM reranks r JOIN reranks b USING (qid)
    WHERE b.cfg = 'off' AND (r.reranked IS DISTINCT FROM b.reranked OR r.rerank_blocks IS DISTINCT FROM b.rerank_blocks)")
  [ "$differ" = 0 ] || fail "$differ EXPLAIN runs rerank differently from io_method = off"
  n=$(sql ours -c "SELECT count(*) FROM reranks WHERE reranked > 0 AND rerank_blocks > 0")
  [ "$n" = $((100 * ${#configs[@]})) ] || fail "only $n of $((100 * ${#configs[@]})) EXPLAIN runs reranked rows from vector blocks"
  echo "reranks identical across settings: $(sql ours -c "SELECT sum(reranked) || ' candidates from ' || sum(rerank_blocks) || ' vector blocks' FROM reranks WHERE cfg = 'off'") per setting (100 queries)"
fi

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
