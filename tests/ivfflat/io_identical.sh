#!/usr/bin/env bash
# Cold-list read-ahead (ivfflat.io_method) changes nothing but time: 300 queries at probes 10
# on an index larger than shared_buffers return the same ids in the same order and read the
# same pages with prefetch and with off, iterative scans included; after the page cache is
# dropped (root only), prefetch overlaps its reads (prefetched > 0) and hints table rows in
# many queries, off does neither; with the index in the page cache only, prefetch streams its
# lists (counted as prefetched) and off does not; a resident index and table are never
# hinted. Cursors closed early and an error in the middle of a scan leave no buffer pinned.
# Usage: tests/ivfflat/io_identical.sh [WORKDIR]   (OURS=..., PORT_OURS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/ivfflat-io.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

start ours
sql ours -c "ALTER SYSTEM SET shared_buffers = '16MB'" -c "ALTER SYSTEM SET effective_io_concurrency = 16"
stop ours
start ours
sql ours <<'SQL'
CREATE EXTENSION vector;
CREATE EXTENSION vector_rs;
CREATE EXTENSION pg_buffercache;
SELECT setseed(0.61);
CREATE TABLE items (id int, v vector(128));
INSERT INTO items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 128) WHERE i > 0)
  FROM generate_series(1, 40000) i;
CREATE TABLE queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 128)
  WHERE j > 0)::vector(128) AS v FROM generate_series(1, 300) j;
SET maintenance_work_mem = '256MB';
CREATE INDEX items_idx ON items USING ivfflat (v vector_l2_ops) WITH (lists = 100);
CREATE TABLE runs (cfg text, qid int, ids int[], pages bigint, hits bigint, reads bigint,
  prefetched bigint, heap_prefetches bigint);
CREATE FUNCTION run_all(cfg text, method text, iterative text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE q record; ids int[]; s record;
BEGIN
  PERFORM set_config('ivfflat.io_method', method, true);
  PERFORM set_config('ivfflat.probes', '10', true);
  PERFORM set_config('ivfflat.iterative_scan', iterative, true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM pg_buffercache_evict_relation('items_idx');
  PERFORM pg_buffercache_evict_relation('items');
  FOR q IN SELECT * FROM queries ORDER BY id LOOP
    ids := array(SELECT id FROM items WHERE id % 5 <> 0 ORDER BY v <-> q.v LIMIT 10);
    SELECT * INTO s FROM ivfflat_last_scan_stats();
    INSERT INTO runs VALUES (cfg, q.id, ids, s.pages, s.hits, s.reads, s.prefetched, s.heap_prefetches);
  END LOOP;
  RETURN (SELECT sum(reads) FROM runs WHERE runs.cfg = run_all.cfg);
END $$;
SQL

dropped=0
for c in "off off off" "prefetch prefetch off" "off-iter off relaxed_order" \
  "prefetch-iter prefetch relaxed_order" "prefetch-page-cache prefetch off"; do
  set -- $c
  # The last configuration reads the index from the page cache (the previous runs left it
  # there; run_all evicts it from shared buffers).
  if [ "$1" != prefetch-page-cache ] && [ -w /proc/sys/vm/drop_caches ]; then
    sync; echo 3 > /proc/sys/vm/drop_caches; dropped=1
  fi
  echo "$1: $(sql ours -c "SELECT run_all('$1', '$2', '$3')") index pages read"
done
differ=$(sql ours -c "SELECT count(*) FROM runs r JOIN runs b ON b.qid = r.qid
  AND b.cfg = CASE WHEN r.cfg LIKE '%iter' THEN 'off-iter' ELSE 'off' END
  WHERE r.ids IS DISTINCT FROM b.ids OR r.pages <> b.pages")
[ "$differ" = 0 ] || fail "$differ query runs differ from ivfflat.io_method = off"
unbalanced=$(sql ours -c "SELECT count(*) FROM runs WHERE hits + reads <> pages")
[ "$unbalanced" = 0 ] || fail "$unbalanced runs where hits + reads <> pages"
short=$(sql ours -c "SELECT count(*) FROM runs WHERE cardinality(ids) <> 10")
[ "$short" = 0 ] || fail "$short queries returned fewer than 10 rows"
none=$(sql ours -c "SELECT coalesce(sum(prefetched + heap_prefetches), 0) FROM runs WHERE cfg LIKE 'off%'")
[ "$none" = 0 ] || fail "ivfflat.io_method = off hinted $none reads"
if [ "$dropped" = 1 ]; then
  for cfg in prefetch prefetch-iter; do
    n=$(sql ours -c "SELECT sum(prefetched) FROM runs WHERE cfg = '$cfg'")
    [ "$n" -gt 0 ] || fail "$cfg prefetched nothing after the page cache was dropped"
  done
  # The table is on the device for most of the run: the scans see their rows' fetches going
  # to it (or the walk cold) and hint the next rows (199 of 300 queries when written).
  n=$(sql ours -c "SELECT count(*) FROM runs WHERE cfg = 'prefetch' AND heap_prefetches > 0")
  [ "$n" -ge 50 ] || fail "prefetch hinted table blocks in only $n of 300 queries, cold"
  echo "cold: $n of 300 queries hinted table blocks ahead of their rows"
fi
n=$(sql ours -c "SELECT sum(prefetched) FROM runs WHERE cfg = 'prefetch-page-cache'")
[ "$n" -gt 0 ] || fail "prefetch streamed no list from the page cache"
echo "ids and pages identical across 5 settings x 300 queries (page cache: $n pages streamed)"

# Resident: the same queries again with the index and the table in shared buffers hint nothing.
sql ours -c "ALTER SYSTEM SET shared_buffers = '256MB'"
stop ours
start ours
resident=$(sql ours -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
  -c "SELECT pg_prewarm('items_idx') > 0 AND pg_prewarm('items') > 0" \
  -c "SET enable_seqscan = off; SET ivfflat.probes = 10" -c "
  SELECT sum(cardinality(array(SELECT id FROM items ORDER BY v <-> q.v LIMIT 10))) FROM queries q" \
  -c "SELECT prefetched + unused_prefetches + heap_prefetches FROM ivfflat_last_scan_stats()" | tail -1)
[ "$resident" = 0 ] || fail "a resident index was hinted ($resident hints)"
echo "resident: no hints"

out=$(sql ours 2>&1 <<'SQL' || true
\set ON_ERROR_STOP 0
SET enable_seqscan = off;
SET ivfflat.probes = 10;
CREATE TEMP VIEW pinned AS SELECT 'pinned ' || count(*) FROM pg_buffercache
  WHERE relfilenode = pg_relation_filenode('items_idx') AND pinning_backends > 0;
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM items ORDER BY v <-> (SELECT v FROM queries WHERE id = 7);
FETCH 3 FROM c;
CLOSE c;
COMMIT;
SELECT * FROM pinned;
SELECT id FROM items WHERE 1 / (id % 2) > 0 ORDER BY v <-> (SELECT v FROM queries WHERE id = 9) LIMIT 50;
SELECT * FROM pinned;
SQL
)
grep -q "division by zero" <<<"$out" || fail "the error mid-scan was not raised: $out"
[ "$(grep -c '^pinned 0$' <<<"$out")" = 2 ] || fail "index buffers left pinned: $out"
! grep -qE "terminated by signal" "$data.log" || fail "a backend crashed"
echo "no pins left after a cursor closed early and an error mid-scan"
