#!/usr/bin/env bash
# ivfflat recall against brute force and against pgvector 0.8.6 on the same data. k-means
# differs from build to build (its random numbers cannot be seeded from SQL), so each library
# builds the index BUILDS times and the means are compared.
#  * 20,000 rows of vector(32) around 64 cluster centers, 200 queries near the data; lists = 100.
#  * Per build: recall@10 at probes 1 and 10 after the build; after 2,000 more inserts; after
#    deleting a tenth of the rows and VACUUM (the truth recomputed each time).
#  * At probes = lists the scan is exact: recall is 1 on both libraries.
#  * Ours' mean recall may not be lower than pgvector's by more than TOLERANCE (0.03;
#    TOLERANCE_PROBES_1, 0.05, at probes 1), or by more than three standard errors of the
#    difference of the two means where the builds of this run spread wider; benches/ measure
#    finer over larger data. At probes 1 the means of five builds move between runs by more
#    than their builds spread within one: four runs (three in CI) gave ours 0.880, 0.859,
#    0.853, 0.853 and pgvector 0.863, 0.843, 0.887, 0.853 (the same data; both average
#    0.861), and the third failed a 0.03 margin.
# Usage: tests/ivfflat/recall.sh [WORKDIR]   (OURS=..., PGVECTOR=..., BUILDS=5, TOLERANCE, TOLERANCE_PROBES_1, ports)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/ivfflat-recall.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
builds=${BUILDS:-5}
tolerance=${TOLERANCE:-0.03}
tolerance_probes_1=${TOLERANCE_PROBES_1:-0.05}

start ours
sql ours <<'SQL' >/dev/null
CREATE EXTENSION vector;
SELECT setseed(0.2024);
CREATE TABLE centers AS SELECT c, array(SELECT random() * 10 FROM generate_series(1, 32) WHERE c > 0) AS x
  FROM generate_series(1, 64) c;
CREATE TABLE base AS SELECT i AS id, (SELECT array_agg(x[k] + (random() - 0.5) * 8) FROM generate_series(1, 32) k)::vector(32) AS v
  FROM generate_series(1, 22000) i JOIN centers ON c = 1 + i % 64;
CREATE TABLE queries AS SELECT id, v FROM base WHERE id % 110 = 0;
UPDATE queries SET v = (SELECT array_agg(e + 0.1) FROM unnest(v::real[]) e)::vector(32);
CREATE TABLE items (id int, v vector(32));
SQL
stop ours

# run LIB: BUILDS builds; prints "phase probes recall" lines.
run() {
  local lib=$1 b phase
  start "$lib"
  for b in $(seq 1 "$builds"); do
    sql "$lib" -c "TRUNCATE items" -c "DROP INDEX IF EXISTS items_idx" \
      -c "INSERT INTO items SELECT * FROM base WHERE id <= 20000" \
      -c "SET maintenance_work_mem = '256MB'" \
      -c "CREATE INDEX items_idx ON items USING ivfflat (v vector_l2_ops) WITH (lists = 100)"
    for phase in build insert vacuum; do
      case $phase in
        insert) sql "$lib" -c "INSERT INTO items SELECT * FROM base WHERE id > 20000" ;;
        vacuum) sql "$lib" -c "DELETE FROM items WHERE id % 10 = 3" -c "VACUUM items" ;;
      esac
      truth "$lib" items "<->" truth
      for probes in 1 10 100; do
        results_with "$lib" items "<->" "SET ivfflat.probes = $probes;" res
        echo "$phase $probes $(recall_of "$lib" res truth)"
      done
    done
  done
  stop "$lib"
}

run ours > "$work/ours.txt"
run pgvector > "$work/pgvector.txt"
mean() { awk -v p="$2" -v n="$3" '$1 == p && $2 == n { s += $3; c++ } END { printf "%.4f", s / c }' "$1"; }
values() { awk -v p="$2" -v n="$3" '$1 == p && $2 == n { print $3 }' "$1" | xargs; }
allowed() {
  local tol=$tolerance
  [ "$2" = 1 ] && tol=$tolerance_probes_1
  allowed_shortfall "$tol" "$(values "$work/ours.txt" "$1" "$2")" "$(values "$work/pgvector.txt" "$1" "$2")"
}
for phase in build insert vacuum; do
  for probes in 1 10; do
    o=$(mean "$work/ours.txt" $phase $probes)
    p=$(mean "$work/pgvector.txt" $phase $probes)
    a=$(allowed $phase $probes)
    echo "$phase, probes $probes: mean recall ours $o, pgvector $p (allowed shortfall $a)"
    at_least "$o" "$(python3 -c "print($p - $a)")" ||
      fail "$phase at probes $probes: ours $o is more than $a below pgvector's $p"
  done
  for f in ours pgvector; do
    exact=$(mean "$work/$f.txt" $phase 100)
    [ "$exact" = "1.0000" ] || fail "$f, $phase: probes = lists gives recall $exact, not 1"
  done
done
echo "probes = lists: exact on both libraries"
