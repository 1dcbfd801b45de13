#!/usr/bin/env bash
# Values so large that an element tuple and its neighbor tuple never share a page (vector(1900)
# with m 100: the neighbor tuple goes first on the next page), written by both libraries.
#  1. Our library builds the index on 60 rows, inserts 30 (new pages for element and neighbor
#     tuples), deletes 15 and vacuums (deleted elements whose neighbor tuple is on another page),
#     inserts 15 (reusing those slots across two pages).
#  2. pgvector (same data directory) answers exactly as ours did, inserts 15, deletes 10,
#     vacuums, inserts 10.
#  3. Our library answers exactly as pgvector did.
# The index passes the page check after every step, and every row is its own nearest neighbor.
# Usage: tests/hnsw/large_values.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-large-values.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

# self_found LIB: every row's own value finds it first.
self_found() {
  local n
  n=$(sql "$1" -c "SET enable_seqscan = off; SET hnsw.ef_search = 100;
    SELECT count(*) FROM big WHERE id <> (SELECT b2.id FROM big b2 ORDER BY b2.v <-> big.v LIMIT 1)")
  [ "$n" = 0 ] || fail "$1: $n rows are not their own nearest neighbor"
}

# record LIB OUT: the ids of 20 queries, in order.
record() {
  sql "$1" -c "SET enable_seqscan = off; DROP TABLE IF EXISTS $2;
    CREATE TABLE $2 AS SELECT q.id AS qid, array(SELECT b.id FROM big b ORDER BY b.v <-> q.v LIMIT 10) AS ids
    FROM big q WHERE q.id % 5 = 1"
}

step() { # LIB NAME
  EXACT=1 check_pages "$1" big_idx big | sed "s/^/   $2: /"
  self_found "$1"
}

echo "-- our library: build, insert, delete + vacuum, insert"
start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE TABLE big (id int, v vector(1900))"
sql ours -c "INSERT INTO big SELECT i, (SELECT array_agg(((i * 31 + d * 7) % 1009)::real)
               FROM generate_series(1, 1900) d)::vector(1900) FROM generate_series(1, 60) i"
sql ours -c "CREATE INDEX big_idx ON big USING hnsw (v vector_l2_ops) WITH (m = 100, ef_construction = 200)"
step ours built
ins() { sql "$1" -c "INSERT INTO big SELECT i, (SELECT array_agg(((i * 31 + d * 7) % 1009)::real)
               FROM generate_series(1, 1900) d)::vector(1900) FROM generate_series($2, $3) i"; }
ins ours 61 90
step ours inserted
sql ours -c "DELETE FROM big WHERE id % 6 = 0" -c "VACUUM (INDEX_CLEANUP ON) big"
step ours vacuumed
ins ours 91 105
step ours reused
record ours res_ours
stop ours

echo "-- pgvector 0.8.6: same answers, then insert, delete + vacuum, insert"
start pgvector
record pgvector again_pgvector
d=$(differing pgvector res_ours again_pgvector)
[ "$d" = 0 ] || fail "$d queries answered differently by pgvector"
ins pgvector 106 120
sql pgvector -c "DELETE FROM big WHERE id % 7 = 0" -c "VACUUM (INDEX_CLEANUP ON) big"
ins pgvector 121 130
step pgvector "pgvector changed"
record pgvector res_pgvector
stop pgvector

echo "-- our library: same answers"
start ours
record ours again_ours
d=$(differing ours res_pgvector again_ours)
[ "$d" = 0 ] || fail "$d queries answered differently by ours"
stop ours
echo "OK: large values written alike by both libraries ($work)"
