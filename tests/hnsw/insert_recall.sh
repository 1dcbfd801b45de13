#!/usr/bin/env bash
# Inserts into an index built empty: ours against pristine pgvector 0.8.6.
#  1. On our library: a table of vector(24) with an hnsw index built while it is empty
#     (vector_l2_ops, m 16, ef_construction 64), then 12000 rows inserted by 4 concurrent
#     sessions in statements of 250 rows, and one row inserted 12 times (duplicates share
#     elements). Pages are checked (check_pages.py), the recall@10 measured at ef_search 40.
#  2. The SAME data directory on pgvector: our index gives the same answers there; pgvector
#     fills an identical table the same way; the recalls must be within 0.015 (concurrent
#     inserts are not deterministic).
# Usage: tests/hnsw/insert_recall.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-insert-recall.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
sessions=4
rows=12000

# fill LIB TABLE: concurrent inserts from src.
fill() {
  local lib=$1 table=$2 per=$((rows / sessions)) pids=()
  for s in $(seq 0 $((sessions - 1))); do
    (
      for from in $(seq $((s * per + 1)) 250 $(((s + 1) * per))); do
        sql "$lib" -c "INSERT INTO $table SELECT id, v FROM src WHERE id BETWEEN $from AND $((from + 249))"
      done
    ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "an insert session failed"; done
  sql "$lib" -c "INSERT INTO $table SELECT 100000 + g, v FROM src, generate_series(1, 12) g WHERE id = 7"
}

echo "-- our library"
start ours
sql ours -c "CREATE EXTENSION vector" -c "SELECT setseed(0.77)" -c "
  CREATE TABLE src AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 24) WHERE i > 0)::vector(24) AS v
  FROM generate_series(1, $rows) i;
  CREATE TABLE queries AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 24) WHERE i > 0)::vector(24) AS v
  FROM generate_series(1, 300) i;
  CREATE TABLE e (id int, v vector(24));
  CREATE TABLE e_p (LIKE e);
  CREATE INDEX e_idx ON e USING hnsw (v vector_l2_ops);" >/dev/null
start_ms=$(date +%s%3N)
fill ours e
echo "   $rows rows inserted by $sessions sessions in $(( $(date +%s%3N) - start_ms )) ms"
truth ours e "<->" truth
results ours e "<->" 40 ours_on_ours
r_ours=$(recall_of ours ours_on_ours truth)
check_pages ours e_idx e | sed 's/^/   pages: /'
dup=$(sql ours -c "SELECT count(*) FROM (SELECT id FROM e ORDER BY v <-> (SELECT v FROM src WHERE id = 7) LIMIT 13) s")
[ "$dup" = 13 ] || fail "the 13 equal rows are not all found ($dup)"
stop ours

echo "-- pgvector 0.8.6 on the same data directory"
start pgvector
results pgvector e "<->" 40 ours_on_pgvector
d=$(differing pgvector ours_on_ours ours_on_pgvector)
[ "$d" = 0 ] || fail "$d queries answered differently by pgvector on our index"
sql pgvector -c "CREATE INDEX e_p_idx ON e_p USING hnsw (v vector_l2_ops)"
start_ms=$(date +%s%3N)
fill pgvector e_p
echo "   $rows rows inserted by $sessions sessions in $(( $(date +%s%3N) - start_ms )) ms"
results pgvector e_p "<->" 40 pgv_on_pgvector
r_pgv=$(recall_of pgvector pgv_on_pgvector truth)
stop pgvector
echo "   recall@10 (ef_search 40): ours $r_ours, pgvector $r_pgv"
within "$r_ours" "$r_pgv" 0.015 || fail "recall differs by more than 0.015"
echo "OK: inserts match pgvector ($work)"
