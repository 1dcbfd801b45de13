#!/usr/bin/env bash
# VACUUM: recall stays at its level after deleting 30% of the rows, vacuuming and inserting new
# rows; ours against pristine pgvector 0.8.6 doing the same.
#  1. On our library: 15000 rows of vector(24), hnsw index (vector_l2_ops, m 16,
#     ef_construction 64); recall@10 at ef_search 40. Then 30% of the rows are deleted and
#     VACUUM runs: the index must hold exactly the remaining rows (VACUUM's count of index
#     tuples and the page check), the recall (against the new exact answers) must stay within 0.02 of before.
#     4500 new rows are inserted (reusing the deleted elements' space): same requirement.
#     The first table is vacuumed with hnsw.vacuum_repair = search (pgvector's repair), a
#     second one with the default (local).
#  2. The SAME data directory on pgvector: our index gives the same answers there; pgvector
#     builds, deletes, vacuums and inserts the same way on an identical table; the recalls after
#     vacuum and after the new inserts must be within 0.015 of ours.
# Usage: tests/hnsw/vacuum_recall.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-vacuum-recall.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

# cycle LIB TABLE PREFIX [REPAIR]: build, measure, delete + vacuum (with hnsw.vacuum_repair =
# REPAIR if given), measure, insert, measure. Prints "R0 R1 R2".
cycle() {
  local lib=$1 t=$2 p=$3 repair=${4:-}
  local set_repair=()
  [ -z "$repair" ] || set_repair=(-c "SET hnsw.vacuum_repair = $repair")
  sql "$lib" -c "CREATE TABLE $t AS SELECT * FROM src WHERE id <= 15000" \
    -c "SET max_parallel_maintenance_workers = 0" \
    -c "CREATE INDEX ${t}_idx ON $t USING hnsw (v vector_l2_ops)"
  truth "$lib" "$t" "<->" "${p}_truth0"
  results "$lib" "$t" "<->" 40 "${p}_res0"
  local r0 r1 r2 counts
  r0=$(recall_of "$lib" "${p}_res0" "${p}_truth0")
  sql "$lib" -c "DELETE FROM $t WHERE id % 10 < 3"
  sql "$lib" "${set_repair[@]}" -c "VACUUM (INDEX_CLEANUP ON) $t"
  # The index tuples VACUUM counted (ambulkdelete's statistics) are the remaining rows.
  counts=$(sql "$lib" -c "SELECT reltuples::bigint || ' ' || (SELECT count(*) FROM $t)
                          FROM pg_class WHERE relname = '${t}_idx'")
  [ "${counts% *}" = "${counts#* }" ] || fail "$lib: after VACUUM the index counts ${counts% *} of ${counts#* } rows" >&2
  truth "$lib" "$t" "<->" "${p}_truth1"
  results "$lib" "$t" "<->" 40 "${p}_res1"
  r1=$(recall_of "$lib" "${p}_res1" "${p}_truth1")
  if [ "$lib" = ours ]; then EXACT=1 check_pages ours "${t}_idx" "$t" | sed 's/^/   after vacuum: /' >&2; fi
  sql "$lib" -c "INSERT INTO $t SELECT * FROM src WHERE id > 15000"
  truth "$lib" "$t" "<->" "${p}_truth2"
  results "$lib" "$t" "<->" 40 "${p}_res2"
  r2=$(recall_of "$lib" "${p}_res2" "${p}_truth2")
  if [ "$lib" = ours ]; then EXACT=1 check_pages ours "${t}_idx" "$t" | sed 's/^/   after inserts: /' >&2; fi
  echo "$r0 $r1 $r2"
}

echo "-- our library"
start ours
sql ours -c "CREATE EXTENSION vector" -c "SELECT setseed(0.55)" -c "
  CREATE TABLE src AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 24) WHERE i > 0)::vector(24) AS v
  FROM generate_series(1, 19500) i;
  CREATE TABLE queries AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 24) WHERE i > 0)::vector(24) AS v
  FROM generate_series(1, 300) i;" >/dev/null
read -r o0 o1 o2 < <(cycle ours t ours search)
echo "   recall@10 (ef_search 40): built $o0, after delete 30% + VACUUM $o1, after inserts $o2"
read -r l0 l1 l2 < <(cycle ours t_l ours_l)
echo "   default (local) repair:   built $l0, after delete 30% + VACUUM $l1, after inserts $l2"
pages=$(sql ours -c "SELECT pg_relation_size('t_idx') / 8192")
stop ours

echo "-- pgvector 0.8.6 on the same data directory"
start pgvector
results pgvector t "<->" 40 ours_on_pgvector
d=$(differing pgvector ours_res2 ours_on_pgvector)
[ "$d" = 0 ] || fail "$d queries answered differently by pgvector on our index"
results pgvector t_l "<->" 40 ours_l_on_pgvector
d=$(differing pgvector ours_l_res2 ours_l_on_pgvector)
[ "$d" = 0 ] || fail "$d queries answered differently by pgvector on our locally repaired index"
read -r p0 p1 p2 < <(cycle pgvector t_p pgv)
echo "   pgvector:                 built $p0, after delete 30% + VACUUM $p1, after inserts $p2"
pages_p=$(sql pgvector -c "SELECT pg_relation_size('t_p_idx') / 8192")
echo "   index pages at the end: ours $pages, pgvector $pages_p"
stop pgvector

for r in "$l1" "$l2"; do at_least "$r" "$(python3 -c "print($l0 - 0.02)")" || fail "local repair: recall fell from $l0 to $r"; done
for r in "$o1" "$o2"; do at_least "$r" "$(python3 -c "print($o0 - 0.02)")" || fail "recall fell from $o0 to $r"; done
within "$o1" "$p1" 0.015 || fail "recall after VACUUM: ours $o1, pgvector $p1"
within "$o2" "$p2" 0.015 || fail "recall after inserts: ours $o2, pgvector $p2"
within "$l1" "$p1" 0.015 || fail "recall after VACUUM (local repair): ours $l1, pgvector $p1"
within "$l2" "$p2" 0.015 || fail "recall after inserts (local repair): ours $l2, pgvector $p2"
echo "OK: vacuum keeps the recall, like pgvector ($work)"
