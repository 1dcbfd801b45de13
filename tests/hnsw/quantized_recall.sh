#!/usr/bin/env bash
# Recall of quantized hnsw indexes (WITH (quantization = ...)) against brute force and against
# pgvector's format on the same data, serial and parallel builds.
#  1. Clustered data (3,000 vector(32) rows around 40 random centres, Gaussian spread of 0.8 per
#     coordinate; 200 queries from the same distribution), the same as halfvec(32), and uniform
#     random data (2,500 vector(64) rows, 200 queries); the exact top 10 of every query by a
#     sequential scan.
#  2. BUILDS builds each (setseed before each: the levels and the rotation come from random())
#     with m = 16, ef_construction = 64, all serial: pgvector's format ('none'), rabitq4 and
#     (clustered vector) rabitq1, on vector_l2_ops and (halfvec) halfvec_cosine_ops. Mean
#     recall@10:
#       rabitq4 at ef_search 40 >= the unquantized index's at 40 less the allowed shortfall
#         (allowed_shortfall in tests/lib.sh: 0.02, or wider when the builds spread wider);
#       rabitq1 at ef_search 400 >= the unquantized index's at 40 less the same (1-bit codes
#         need many more candidates: their recall at 40 and 100 is printed);
#       on the clustered data both >= 0.95. Recall with hnsw.rerank_candidates = 10 is printed.
#     Every quantized answer comes back in exact-distance order (each row's distance
#     recomputed from the table: l2, or for cosine the negative inner product of the values
#     normalized as halfvec, which is what pgvector's format orders by too), and every index
#     passes hnsw_index_parent_check with heapallindexed.
#  3. Parallel builds of rabitq4 on the clustered table (parallel_workers = 2, DEBUG1 must say
#     "using 2 parallel workers"), BUILDS times: mean recall at ef_search 40 >= the serial
#     builds' less the allowed shortfall; the verifier passes.
#  4. With 40 regions (hnsw.build_regions = 40; the metapage must say 40), rabitq4 serial and
#     parallel, BUILDS times each: mean recall at ef_search 40 >= the unquantized index's less
#     the allowed shortfall, and >= 0.95; answers in exact-distance order; the verifier passes.
#     rabitq1's recall with 40 regions is printed beside its recall with one.
# Usage: tests/hnsw/quantized_recall.sh [WORKDIR] [BUILDS]   (OURS=..., PORT_OURS; 3 builds)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-quantized-recall.XXXXXX)}
builds=${2:-3}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
status=0
bad() { echo "FAIL: $*"; status=1; }
mean() { python3 -c "import sys; v=[float(x) for x in sys.stdin.read().split()]; print(round(sum(v)/len(v), 4))"; }
minus() { python3 -c "print(round($1 - $2, 4))"; }

start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.41)" -c "
  CREATE TABLE centres AS SELECT c, array(SELECT random() * 2 - 1 FROM generate_series(1, 32) WHERE c >= 0) AS a
    FROM generate_series(0, 39) c;
  -- A centre plus Gaussian noise (Box-Muller) of standard deviation 0.8 per coordinate.
  CREATE FUNCTION near(int) RETURNS vector(32) LANGUAGE sql VOLATILE AS \$\$
    SELECT array(SELECT a[j] + 0.8 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
      FROM generate_series(1, 32) j)::vector(32) FROM centres WHERE c = \$1 % 40 \$\$;
  CREATE TABLE clustered (id int, v vector(32));
  INSERT INTO clustered SELECT i, near(i) FROM generate_series(1, 3000) i;
  CREATE TABLE queries_clustered AS SELECT i AS id, near(i * 7)::vector(32) AS v FROM generate_series(1, 200) i;
  CREATE TABLE clustered_h (id int, v halfvec(32));
  INSERT INTO clustered_h SELECT id, v::halfvec FROM clustered;
  CREATE TABLE queries_clustered_h AS SELECT id, v::halfvec(32) AS v FROM queries_clustered;
  CREATE TABLE uniform (id int, v vector(64));
  INSERT INTO uniform SELECT i, array(SELECT random() * 2 - 1 FROM generate_series(1, 64) WHERE i > 0)
    FROM generate_series(1, 2500) i;
  CREATE TABLE queries_uniform AS SELECT i AS id,
    array(SELECT random() * 2 - 1 FROM generate_series(1, 64) WHERE i > 0)::vector(64) AS v
    FROM generate_series(1, 200) i;
  ANALYZE;" >/dev/null

# build TABLE OPCLASS QUANTIZATION SEED [WORKERS]: the table's index, after setseed(SEED), with
# hnsw.build_regions = $REGIONS (default 0: one region below 4,000 rows); prints the server's
# messages (DEBUG1).
build() {
  local workers=${5:-0}
  sql ours -c "DROP INDEX IF EXISTS ${1}_idx" >/dev/null
  PGOPTIONS="-c client_min_messages=debug1" sql ours -c "SELECT setseed($4)" \
    -c "ALTER TABLE $1 SET (parallel_workers = $((workers > 0 ? workers : 1)))" \
    -c "SET max_parallel_maintenance_workers = $workers; SET maintenance_work_mem = '256MB'" \
    -c "SET hnsw.build_regions = ${REGIONS:-0}" \
    -c "CREATE INDEX ${1}_idx ON $1 USING hnsw (v $2)
          WITH (m = 16, ef_construction = 64, quantization = '$3')" 2>&1
}
# recall_at TABLE OPERATOR EF [SETTINGS]: recall@10 of the table's index at ef_search EF.
recall_at() {
  results_with ours "$1" "$2" "SET hnsw.ef_search = $3; ${4:-}" "r_$1"
  recall_of ours "r_$1" "truth_$1"
}
# in_order_failures TABLE DISTANCE: answers (r_TABLE) whose rows are not in the order of
# DISTANCE (an expression of t.v and q.v: the index's own distance).
in_order_failures() {
  sql ours -c "SELECT count(*) FROM r_$1 r JOIN queries q ON q.id = r.qid WHERE EXISTS (
    SELECT 1 FROM (SELECT $2 AS d, lag($2) OVER (ORDER BY u.o) AS p
      FROM unnest(r.ids) WITH ORDINALITY u(x, o) JOIN $1 t ON t.id = u.x) s WHERE d < p)"
}
verify() {
  sql ours -c "SELECT hnsw_index_parent_check('${1}_idx', true)" >/dev/null 2>&1 || bad "$1 ($2): verifier"
}

# table|opclass|operator|quantizations (after none)|the index's distance (cosine: the negative
# inner product of the values normalized as halfvec, as pgvector orders them)
cases=(
  "clustered|vector_l2_ops|<->|rabitq4 rabitq1|t.v <-> q.v"
  "clustered_h|halfvec_cosine_ops|<=>|rabitq4|l2_normalize(t.v) <#> l2_normalize(q.v)"
  "uniform|vector_l2_ops|<->|rabitq4|t.v <-> q.v"
)
declare -A all
for c in "${cases[@]}"; do
  IFS='|' read -r table opclass op quantizations distance <<< "$c"
  sql ours -c "DROP TABLE IF EXISTS queries; CREATE TABLE queries AS TABLE queries_$table"
  truth ours "$table" "$op" "truth_$table"
  for q in none $quantizations; do
    for ((b = 1; b <= builds; b++)); do
      build "$table" "$opclass" "$q" "0.$b$b" >/dev/null
      verify "$table" "$q"
      all[$table:$q:40]+=" $(recall_at "$table" "$op" 40)"
      if [ "$q" != none ]; then
        n=$(in_order_failures "$table" "$distance")
        [ "$n" = 0 ] || bad "$table ($q): $n answers out of exact-distance order"
        all[$table:$q:rr10]+=" $(recall_at "$table" "$op" 40 "SET hnsw.rerank_candidates = 10;")"
      fi
      if [ "$q" = rabitq1 ]; then
        all[$table:$q:100]+=" $(recall_at "$table" "$op" 100)"
        all[$table:$q:400]+=" $(recall_at "$table" "$op" 400)"
        n=$(in_order_failures "$table" "$distance")
        [ "$n" = 0 ] || bad "$table ($q, ef_search 400): $n answers out of exact-distance order"
      fi
    done
  done
  base=$(mean <<< "${all[$table:none:40]}")
  q4=$(mean <<< "${all[$table:rabitq4:40]}")
  a4=$(allowed_shortfall 0.02 "${all[$table:rabitq4:40]}" "${all[$table:none:40]}")
  line="   $table ($opclass): mean recall@10 over $builds builds: unquantized $base (ef_search 40);"
  line+=" rabitq4 $q4 (40), $(mean <<< "${all[$table:rabitq4:rr10]}") (40, rerank 10)"
  at_least "$q4" "$(minus "$base" "$a4")" || bad "$table: rabitq4 recall $q4 more than $a4 below the unquantized $base"
  [ "$table" != clustered ] || at_least "$q4" 0.95 || bad "$table: rabitq4 recall $q4 below 0.95"
  if [[ " $quantizations " == *" rabitq1 "* ]]; then
    q1=$(mean <<< "${all[$table:rabitq1:400]}")
    a1=$(allowed_shortfall 0.02 "${all[$table:rabitq1:400]}" "${all[$table:none:40]}")
    line+="; rabitq1 $(mean <<< "${all[$table:rabitq1:40]}") (40), $(mean <<< "${all[$table:rabitq1:100]}") (100),"
    line+=" $q1 (400), $(mean <<< "${all[$table:rabitq1:rr10]}") (40, rerank 10)"
    at_least "$q1" "$(minus "$base" "$a1")" || bad "$table: rabitq1 recall $q1 at ef_search 400 more than $a1 below the unquantized $base at 40"
    [ "$table" != clustered ] || at_least "$q1" 0.95 || bad "$table: rabitq1 recall $q1 at ef_search 400 below 0.95"
  fi
  echo "$line; allowed shortfall $a4${a1:+ / $a1}"
  a1=""
done

echo "-- parallel builds of rabitq4 (parallel_workers = 2)"
sql ours -c "DROP TABLE IF EXISTS queries; CREATE TABLE queries AS TABLE queries_clustered"
p=""
for ((b = 1; b <= builds; b++)); do
  out=$(build clustered vector_l2_ops rabitq4 "0.$b$b" 2)
  grep -q "using 2 parallel workers" <<< "$out" || bad "no parallel workers: $out"
  verify clustered "rabitq4, parallel"
  p+=" $(recall_at clustered "<->" 40)"
  n=$(in_order_failures clustered "t.v <-> q.v")
  [ "$n" = 0 ] || bad "clustered (rabitq4, parallel): $n answers out of exact-distance order"
done
pm=$(mean <<< "$p")
sm=$(mean <<< "${all[clustered:rabitq4:40]}")
ap=$(allowed_shortfall 0.02 "$p" "${all[clustered:rabitq4:40]}")
echo "   clustered: rabitq4 mean recall@10 at ef_search 40: parallel $pm, serial $sm (allowed shortfall $ap)"
at_least "$pm" "$(minus "$sm" "$ap")" || bad "parallel rabitq4 recall $pm more than $ap below the serial $sm"

echo "-- 40 regions (hnsw.build_regions = 40, one per cluster), serial and parallel"
regions_of() { sql ours -c "SELECT get_byte(p, 96 + 48) + 256 * get_byte(p, 97 + 48) FROM get_raw_page('clustered_idx', 0) p"; }
sql ours -c "CREATE EXTENSION IF NOT EXISTS pageinspect"
r4="" r4p="" r1=""
for ((b = 1; b <= builds; b++)); do
  for workers in 0 2; do
    REGIONS=40 build clustered vector_l2_ops rabitq4 "0.$b$b" $workers >/dev/null
    [ "$(regions_of)" = 40 ] || bad "clustered (rabitq4, 40 regions, $workers workers): $(regions_of) regions"
    verify clustered "rabitq4, 40 regions, $workers workers"
    recall=$(recall_at clustered "<->" 40)
    if [ $workers = 0 ]; then r4+=" $recall"; else r4p+=" $recall"; fi
    n=$(in_order_failures clustered "t.v <-> q.v")
    [ "$n" = 0 ] || bad "clustered (rabitq4, 40 regions): $n answers out of exact-distance order"
  done
  REGIONS=40 build clustered vector_l2_ops rabitq1 "0.$b$b" >/dev/null
  verify clustered "rabitq1, 40 regions"
  r1+=" $(recall_at clustered "<->" 40)"
done
base=$(mean <<< "${all[clustered:none:40]}")
for v in "rabitq4|$r4" "rabitq4, parallel|$r4p"; do
  IFS='|' read -r what values <<< "$v"
  m=$(mean <<< "$values")
  a=$(allowed_shortfall 0.02 "$values" "${all[clustered:none:40]}")
  echo "   clustered, 40 regions: $what mean recall@10 at ef_search 40: $m (unquantized $base, allowed shortfall $a)"
  at_least "$m" "$(minus "$base" "$a")" || bad "$what with 40 regions: recall $m more than $a below the unquantized $base"
  at_least "$m" 0.95 || bad "$what with 40 regions: recall $m below 0.95"
done
echo "   clustered, 40 regions: rabitq1 mean recall@10 at ef_search 40: $(mean <<< "$r1") (one region: $(mean <<< "${all[clustered:rabitq1:40]}"))"
stop ours
[ $status = 0 ] && echo "OK: quantized recall against brute force and the unquantized index ($work)"
exit $status
