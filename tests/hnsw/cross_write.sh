#!/usr/bin/env bash
# Both libraries writing the same indexes: pgvector 0.8.6 inserts into and vacuums indexes our
# library built and changed, and our library inserts into and vacuums indexes pgvector built.
#  1. pgvector builds index pb_idx on 10000 rows of vector(16) (vector_l2_ops, m 12,
#     ef_construction 40); our library builds ob_idx on the same rows. Queries and data are
#     deterministic (setseed).
#  2. Our library inserts 3000 rows into both tables, deletes 20% of the rows and vacuums.
#  3. pgvector (same data directory) must answer exactly as ours did, then inserts 3000 more
#     rows, deletes another 10% and vacuums.
#  4. Our library must answer exactly as pgvector did.
# After every step both indexes pass the page check (check_pages.py, exact after VACUUM) and at
# the end both recalls are above 0.9 and within 0.015 of each other.
# Usage: tests/hnsw/cross_write.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-cross-write.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
tables=(pb ob)

# maintain LIB FROM TO DELETE: insert src rows FROM..TO into both tables, delete, vacuum.
maintain() {
  for t in "${tables[@]}"; do
    sql "$1" -c "INSERT INTO $t SELECT * FROM src WHERE id BETWEEN $2 AND $3" \
      -c "DELETE FROM $t WHERE $4" -c "VACUUM (INDEX_CLEANUP ON) $t"
    EXACT=1 check_pages "$1" "${t}_idx" "$t" | sed "s/^/   $t: /"
  done
}

# record LIB STEP: results of both indexes.
record() {
  for t in "${tables[@]}"; do results "$1" "$t" "<->" 40 "res_${t}_$2"; done
}

# compare LIB STEP: the results of STEP must be reproduced by LIB.
compare() {
  for t in "${tables[@]}"; do
    results "$1" "$t" "<->" 40 "again_${t}_$2"
    d=$(differing "$1" "res_${t}_$2" "again_${t}_$2")
    [ "$d" = 0 ] || fail "$1: $d queries of $t answered differently than after step $2"
  done
}

echo "-- pgvector 0.8.6 builds pb_idx"
start pgvector
sql pgvector -c "CREATE EXTENSION vector" -c "SELECT setseed(0.12)" -c "
  CREATE TABLE src AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 16) WHERE i > 0)::vector(16) AS v
  FROM generate_series(1, 16000) i;
  CREATE TABLE queries AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 16) WHERE i > 0)::vector(16) AS v
  FROM generate_series(1, 300) i;
  CREATE TABLE pb AS SELECT * FROM src WHERE id <= 10000;
  CREATE TABLE ob AS SELECT * FROM src WHERE id <= 10000;
  CREATE INDEX pb_idx ON pb USING hnsw (v vector_l2_ops) WITH (m = 12, ef_construction = 40);" \
  >/dev/null
stop pgvector

echo "-- our library builds ob_idx, inserts, deletes and vacuums both"
start ours
sql ours -c "CREATE INDEX ob_idx ON ob USING hnsw (v vector_l2_ops) WITH (m = 12, ef_construction = 40)"
maintain ours 10001 13000 "id % 5 = 0"
record ours 2
stop ours

echo "-- pgvector answers the same, then inserts, deletes and vacuums both"
start pgvector
compare pgvector 2
maintain pgvector 13001 16000 "id % 10 = 1"
record pgvector 3
stop pgvector

echo "-- our library answers the same"
start ours
compare ours 3
truth ours pb "<->" truth
r_pb=$(recall_of ours res_pb_3 truth)
r_ob=$(recall_of ours res_ob_3 truth)
# Both tables hold the same rows, so one exact answer serves both.
n=$(sql ours -c "SELECT count(*) FROM pb FULL JOIN ob USING (id) WHERE pb.id IS NULL OR ob.id IS NULL")
[ "$n" = 0 ] || fail "the tables differ"
stop ours
echo "   recall@10 (ef_search 40): pgvector-built $r_pb, ours-built $r_ob"
at_least "$r_pb" 0.9 && at_least "$r_ob" 0.9 || fail "recall below 0.9"
within "$r_pb" "$r_ob" 0.015 || fail "recalls differ by more than 0.015"
echo "OK: each library maintains the other's indexes ($work)"
