#!/usr/bin/env bash
# Builds that outgrow maintenance_work_mem, and build progress; ours against pristine pgvector.
#  1. On our library, 10000 rows of vector(32) are indexed with maintenance_work_mem = 2MB:
#     the build must say, in pgvector's words (NOTICE, DETAIL, HINT), that the graph no longer
#     fits after some number of tuples (within 25% of pgvector's number), and finish on disk.
#     While it runs, pg_stat_progress_create_index must show the "building index: loading
#     tuples" phase with a growing tuples_done. The index passes the page check.
#  2. The SAME data directory on pgvector: our index gives the same answers there; pgvector
#     builds the same index with the same setting; the recalls must be within 0.015.
# Usage: tests/hnsw/build_memory_limit.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-build-memory.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

# build LIB TABLE: the build's messages in $work/TABLE.msg, progress samples in TABLE.progress.
build() {
  local lib=$1 t=$2
  PGOPTIONS="-c client_min_messages=notice" sql "$lib" \
    -c "SET maintenance_work_mem = '2MB'; SET max_parallel_maintenance_workers = 0" \
    -c "CREATE INDEX ${t}_idx ON $t USING hnsw (v vector_l2_ops)" > "$work/$t.msg" 2>&1 &
  local pid=$!
  : > "$work/$t.progress"
  while kill -0 "$pid" 2>/dev/null; do
    sql "$lib" -c "SELECT phase || '|' || tuples_done FROM pg_stat_progress_create_index
                   WHERE relid = '$t'::regclass" >> "$work/$t.progress" || true
    sleep 0.2
  done
  wait "$pid" || { cat "$work/$t.msg"; fail "$lib: the build failed"; }
}

# check_build TABLE: the messages and the progress of the build of TABLE; prints the tuple count
# of the NOTICE.
check_build() {
  local t=$1 n
  n=$(sed -n 's/^NOTICE:  hnsw graph no longer fits into maintenance_work_mem after \([0-9]*\) tuples$/\1/p' "$work/$t.msg")
  [ -n "$n" ] || { cat "$work/$t.msg"; fail "$t: no NOTICE"; }
  grep -qx 'DETAIL:  Building will take significantly more time.' "$work/$t.msg" || fail "$t: DETAIL"
  grep -qx 'HINT:  Increase maintenance_work_mem to speed up builds.' "$work/$t.msg" || fail "$t: HINT"
  local samples first last
  samples=$(grep -c '^building index: loading tuples|' "$work/$t.progress" || true)
  [ "$samples" -ge 2 ] || { cat "$work/$t.progress"; fail "$t: the loading phase was not seen twice"; }
  first=$(grep '^building index: loading tuples|' "$work/$t.progress" | head -1 | cut -d'|' -f2)
  last=$(grep '^building index: loading tuples|' "$work/$t.progress" | tail -1 | cut -d'|' -f2)
  [ "$last" -gt "$first" ] && [ "$last" -le 10000 ] || fail "$t: tuples_done went from $first to $last"
  echo "$n"
}

echo "-- our library"
start ours
sql ours -c "CREATE EXTENSION vector" -c "SELECT setseed(0.66)" -c "
  CREATE TABLE src AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 32) WHERE i > 0)::vector(32) AS v
  FROM generate_series(1, 10000) i;
  CREATE TABLE queries AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 32) WHERE i > 0)::vector(32) AS v
  FROM generate_series(1, 300) i;
  CREATE TABLE t AS TABLE src;
  CREATE TABLE t_p AS TABLE src;" >/dev/null
build ours t
n_ours=$(check_build t)
EXACT=1 check_pages ours t_idx t | sed 's/^/   pages: /'
truth ours t "<->" truth
results ours t "<->" 40 ours_on_ours
r_ours=$(recall_of ours ours_on_ours truth)
stop ours

echo "-- pgvector 0.8.6 on the same data directory"
start pgvector
results pgvector t "<->" 40 ours_on_pgvector
d=$(differing pgvector ours_on_ours ours_on_pgvector)
[ "$d" = 0 ] || fail "$d queries answered differently by pgvector on our index"
build pgvector t_p
n_pgv=$(check_build t_p)
results pgvector t_p "<->" 40 pgv_on_pgvector
r_pgv=$(recall_of pgvector pgv_on_pgvector truth)
stop pgvector

echo "   graph left memory after: ours $n_ours tuples, pgvector $n_pgv tuples"
echo "   progress samples in the loading phase: ours $(grep -c loading "$work/t.progress"), pgvector $(grep -c loading "$work/t_p.progress")"
echo "   recall@10 (ef_search 40): ours $r_ours, pgvector $r_pgv"
python3 -c "import sys; sys.exit(0 if abs($n_ours - $n_pgv) <= 0.25 * $n_pgv else 1)" ||
  fail "the graph left memory at a very different point than pgvector's"
within "$r_ours" "$r_pgv" 0.015 || fail "recall differs by more than 0.015"
echo "OK: memory-limited builds match pgvector ($work)"
