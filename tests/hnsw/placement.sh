#!/usr/bin/env bash
# Placement moves pages, not results: an index built with hnsw.build_placement = neighbors
# walks the same graph as one built with insertion (pgvector's order) and reads fewer blocks.
#  1. Clustered data (40 centers) at 128, 384 and 768 dimensions as vector (768: each point's
#     384 coordinates twice), and at 384 as halfvec.
#  2. For each: two serial builds under the same setseed() (which fixes the levels drawn), one
#     per placement. Every query runs with the index evicted from shared buffers
#     (pg_buffercache_evict_relation), so its reads are the distinct blocks it needs.
#  3. Both builds must return the same ids in the same order with the same hops and elements
#     visited per query, pass the page check (check_pages.py), and the placed index must read
#     strictly fewer blocks in total at 128 and 384 dimensions (768 is reported: two elements
#     fit a page there).
# Prints blocks and hops per query for each.
# Usage: tests/hnsw/placement.sh WORKDIR [ROWS] [QUERIES]   (about 2 minutes at the defaults)
set -euo pipefail
work=${1:?workdir}
rows=${2:-10000}
queries=${3:-100}
source "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

start ours
sql ours <<SQL
CREATE EXTENSION vector;
CREATE EXTENSION vector_rs;
CREATE EXTENSION pg_buffercache;
SELECT setseed(0.42);
CREATE TABLE centers AS SELECT c, array(SELECT random() - 0.5 FROM generate_series(1, 384)
  WHERE c >= 0) AS a FROM generate_series(0, 39) c;
-- Each point: a center plus noise about a fifth of the centers' spread.
CREATE TABLE src AS SELECT i AS id, array(SELECT x + (random() - 0.5) * 0.2
  FROM unnest((SELECT a FROM centers WHERE c = (i * 7919) % 40)) x WHERE i > 0) AS a
  FROM generate_series(1, $rows) i;
CREATE TABLE qsrc AS SELECT j AS id, array(SELECT x + (random() - 0.5) * 0.2
  FROM unnest((SELECT a FROM centers WHERE c = (j * 104729) % 40)) x WHERE j > 0) AS a
  FROM generate_series(1, $queries) j;
CREATE TABLE d128 AS SELECT id, a[1:128]::vector(128) AS v FROM src;
CREATE TABLE d384 AS SELECT id, a::vector(384) AS v FROM src;
CREATE TABLE d768 AS SELECT id, (a || a)::vector(768) AS v FROM src;
CREATE TABLE h384 AS SELECT id, a::halfvec(384) AS v FROM src;
CREATE TABLE runs (tbl text, placement text, qid int, ids int[], hops bigint, visited bigint,
  reads bigint);
-- Runs every query on the table's index, each with the index out of shared buffers.
CREATE FUNCTION run_queries(tbl text, placement text, typ text) RETURNS void
LANGUAGE plpgsql AS \$\$
DECLARE q record; found int[]; s record;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  FOR q IN SELECT id, a FROM qsrc ORDER BY id LOOP
    PERFORM pg_buffercache_evict_relation(tbl || '_idx');
    EXECUTE format('SELECT array(SELECT id FROM %I ORDER BY v <-> (\$1)::%s LIMIT 10)', tbl, typ)
      INTO found USING CASE WHEN typ LIKE '%(128)' THEN q.a[1:128]
        WHEN typ LIKE '%(768)' THEN q.a || q.a ELSE q.a END;
    SELECT * INTO s FROM hnsw_last_scan_stats();
    INSERT INTO runs VALUES (tbl, placement, q.id, found, s.hops, s.visited, s.reads);
  END LOOP;
END \$\$;
SQL

for spec in "d128 vector(128) vector_l2_ops" "d384 vector(384) vector_l2_ops" \
  "d768 vector(768) vector_l2_ops" "h384 halfvec(384) halfvec_l2_ops"; do
  set -- $spec
  for placement in insertion neighbors; do
    sql ours -c "SET hnsw.build_placement = $placement" -c "SET max_parallel_maintenance_workers = 0" \
      -c "SET maintenance_work_mem = '512MB'" -c "SELECT setseed(0.77)" \
      -c "CREATE INDEX $1_idx ON $1 USING hnsw (v $3)" \
      -c "SELECT run_queries('$1', '$placement', '$2')"
    EXACT=1 check_pages ours "$1_idx" "$1" | sed "/^$/d; s/^/   $1 $placement: /"
    pages=$(sql ours -c "SELECT pg_relation_size('$1_idx') / 8192")
    echo "   $1 $placement: $pages pages"
    sql ours -c "DROP INDEX $1_idx"
  done
done

sql ours -c "SELECT tbl, placement, round(avg(reads), 1) AS blocks_per_query,
    round(avg(hops), 1) AS hops_per_query, round(avg(reads) / avg(hops), 2) AS blocks_per_hop
  FROM runs GROUP BY 1, 2 ORDER BY 1, 2" | sed 's/^/   /'

differ=$(sql ours -c "SELECT count(*) FROM runs a JOIN runs b USING (tbl, qid)
  WHERE a.placement = 'insertion' AND b.placement = 'neighbors'
    AND (a.ids IS DISTINCT FROM b.ids OR a.hops <> b.hops OR a.visited <> b.visited)")
[ "$differ" = 0 ] || fail "$differ queries differ in ids, hops or elements visited between placements"
empty=$(sql ours -c "SELECT count(*) FROM runs WHERE cardinality(ids) IS DISTINCT FROM 10")
[ "$empty" = 0 ] || fail "$empty queries returned fewer than 10 rows"
for tbl in d128 d384 h384; do
  read -r before after < <(sql ours -F' ' -c "SELECT sum(reads) FILTER (WHERE placement = 'insertion'),
    sum(reads) FILTER (WHERE placement = 'neighbors') FROM runs WHERE tbl = '$tbl'")
  [ "$after" -lt "$before" ] || fail "$tbl: $after blocks read placed against $before in insertion order"
done
echo "placement: same results, fewer blocks at 128 and 384 dimensions"
