#!/usr/bin/env bash
# Index builds: ours against pristine pgvector 0.8.6 on the same data and parameters.
#  1. A cluster is created on our library with deterministic data (setseed): vector(32) with
#     vector_l2_ops (m 16, ef_construction 64), halfvec(24) with halfvec_cosine_ops (m 12,
#     ef_construction 48) and sparsevec(200) with sparsevec_l2_ops (m 12, ef_construction 48),
#     plus queries and the exact top 10 of each (sequential scans). Our library builds an index
#     on each table, the results of every query are recorded and their recall measured.
#  2. The SAME data directory is started on pgvector: our indexes must give identical ids in
#     identical order, and pass the page check (check_pages.py). pgvector then builds its own
#     index on an identical copy of each table; its recall must be within 0.01 of ours (the
#     parameters are chosen so that pgvector's own recall varies by less than half that from
#     build to build).
#  3. Back on our library: pgvector's indexes give pgvector's answers; REINDEX CONCURRENTLY of
#     ours works and keeps the recall.
# Usage: tests/hnsw/build_recall.sh [WORKDIR]   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-build-recall.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

# name  type-of-queries  operator  opclass  WITH
cases=(
  "l2|vector(32)|<->|vector_l2_ops|m = 16, ef_construction = 64"
  "cos|halfvec(24)|<=>|halfvec_cosine_ops|m = 12, ef_construction = 48"
  "sp|sparsevec(200)|<->|sparsevec_l2_ops|m = 12, ef_construction = 48"
)

echo "-- our library: data, exact answers, builds"
start ours
sql ours -c "CREATE EXTENSION vector" -c "SELECT setseed(0.31)" -c "
  CREATE TABLE src AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 32) WHERE i > 0) AS a
  FROM generate_series(1, 20000) i;
  CREATE TABLE qsrc AS SELECT i AS id,
    array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 32) WHERE i > 0) AS a
  FROM generate_series(1, 400) i;
  CREATE TABLE l2 AS SELECT id, a::vector(32) AS v FROM src;
  CREATE TABLE cos AS SELECT id, a[1:24]::halfvec(24) AS v FROM src;
  -- Sparse: keep the positive coordinates of 32 spread over 200 dimensions.
  CREATE FUNCTION to_sparse(real[]) RETURNS sparsevec(200) LANGUAGE sql IMMUTABLE AS \$\$
    SELECT ('{' || coalesce(string_agg((i * 6 + 1) || ':' || x, ',' ORDER BY i), '') || '}/200')::sparsevec
    FROM unnest(\$1) WITH ORDINALITY u(x, i) WHERE x > 0 \$\$;
  CREATE TABLE sp AS SELECT id, to_sparse(a)::sparsevec(200) AS v FROM src;" >/dev/null
for c in "${cases[@]}"; do
  IFS='|' read -r name type op opclass with <<< "$c"
  queries="CREATE TABLE queries_$name AS SELECT id, "
  case $name in
    l2) queries+="a::vector(32) AS v" ;;
    cos) queries+="a[1:24]::halfvec(24) AS v" ;;
    sp) queries+="to_sparse(a)::sparsevec(200) AS v" ;;
  esac
  sql ours -c "$queries FROM qsrc" -c "CREATE TABLE ${name}_p AS TABLE $name"
  sql ours -c "DROP TABLE IF EXISTS queries; CREATE TABLE queries AS TABLE queries_$name"
  truth ours "$name" "$op" "truth_$name"
  start_ms=$(date +%s%3N)
  sql ours -c "SET maintenance_work_mem = '512MB'" \
    -c "CREATE INDEX ${name}_idx ON $name USING hnsw (v $opclass) WITH ($with)"
  echo "   $name: built by ours in $(( $(date +%s%3N) - start_ms )) ms"
  results ours "$name" "$op" 40 "ours_on_ours_$name"
  sql ours -c "DROP TABLE queries"
done
stop ours

echo "-- pgvector 0.8.6 on the same data directory"
start pgvector
status=0
for c in "${cases[@]}"; do
  IFS='|' read -r name type op opclass with <<< "$c"
  sql pgvector -c "DROP TABLE IF EXISTS queries; CREATE TABLE queries AS TABLE queries_$name"
  results pgvector "$name" "$op" 40 "ours_on_pgvector_$name"
  d=$(differing pgvector "ours_on_ours_$name" "ours_on_pgvector_$name")
  [ "$d" = 0 ] || { echo "FAIL: $name: $d queries answered differently by pgvector on our index"; status=1; }
  EXACT=1 check_pages pgvector "${name}_idx" "$name" | sed "s/^/   $name (ours) pages: /"
  start_ms=$(date +%s%3N)
  sql pgvector -c "SET max_parallel_maintenance_workers = 0; SET maintenance_work_mem = '512MB'" \
    -c "CREATE INDEX ${name}_p_idx ON ${name}_p USING hnsw (v $opclass) WITH ($with)"
  echo "   $name: built by pgvector in $(( $(date +%s%3N) - start_ms )) ms"
  results pgvector "${name}_p" "$op" 40 "pgv_on_pgvector_$name"
  r_ours=$(recall_of pgvector "ours_on_pgvector_$name" "truth_$name")
  r_pgv=$(recall_of pgvector "pgv_on_pgvector_$name" "truth_$name")
  echo "   $name: recall@10 (ef_search 40): ours-built $r_ours, pgvector-built $r_pgv"
  within "$r_ours" "$r_pgv" 0.01 || { echo "FAIL: $name: recall differs by more than 0.01"; status=1; }
done
stop pgvector

echo "-- back on our library"
start ours
for c in "${cases[@]}"; do
  IFS='|' read -r name type op opclass with <<< "$c"
  sql ours -c "DROP TABLE IF EXISTS queries; CREATE TABLE queries AS TABLE queries_$name"
  results ours "${name}_p" "$op" 40 "pgv_on_ours_$name"
  d=$(differing ours "pgv_on_pgvector_$name" "pgv_on_ours_$name")
  [ "$d" = 0 ] || { echo "FAIL: $name: $d queries answered differently by ours on pgvector's index"; status=1; }
done
sql ours -c "REINDEX INDEX CONCURRENTLY l2_idx"
sql ours -c "DROP TABLE IF EXISTS queries; CREATE TABLE queries AS TABLE queries_l2"
results ours l2 "<->" 40 reindexed_l2
r=$(recall_of ours reindexed_l2 truth_l2)
echo "   l2 after REINDEX CONCURRENTLY: recall@10 $r"
at_least "$r" 0.85 || { echo "FAIL: recall after REINDEX CONCURRENTLY"; status=1; }
stop ours
[ $status = 0 ] && echo "OK: builds match pgvector ($work)"
exit $status
