#!/usr/bin/env bash
# An ivfflat index is the same index on either library: one built, inserted into and vacuumed
# by ours answers identically on pristine pgvector 0.8.6, and the other way round.
#  1. On ours: tables of vector(16), halfvec(16) and bit(64) rows, an index per operator class
#     (7), 50 queries each; the 10 nearest ids at probes 1, 4 and with an iterative scan.
#  2. The same data directory on pgvector: identical ids in identical order.
#  3. On pgvector: 600 inserts and deletes of a tenth of the rows, VACUUM; results recorded;
#     back on ours: identical. Then the same on ours, read back on pgvector.
#  4. Exact scans (probes = lists) equal a sequential scan on both libraries (but for cosine,
#     see exact()).
# Usage: tests/ivfflat/cross_library.sh [WORKDIR]   (OURS=..., PGVECTOR=..., ports)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/ivfflat-cross.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

# table, type, operator, opclass
indexes=("vl2 vector(16) <-> vector_l2_ops" "vip vector(16) <#> vector_ip_ops"
  "vcos vector(16) <=> vector_cosine_ops" "hl2 halfvec(16) <-> halfvec_l2_ops"
  "hip halfvec(16) <#> halfvec_ip_ops" "hcos halfvec(16) <=> halfvec_cosine_ops"
  "bham bit(64) <~> bit_hamming_ops")

start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.42)" >/dev/null
for spec in "${indexes[@]}"; do
  set -- $spec
  if [ "$2" = "bit(64)" ]; then
    value="(floor(random() * 4294967296)::bigint << 32 | floor(random() * 4294967296)::bigint)::bit(64)"
  else
    value="(SELECT array_agg(round((random() * 4 - 2)::numeric, 2)) FROM generate_series(1, 16) WHERE i > 0)::$2"
  fi
  sql ours -c "CREATE TABLE $1 (id int, v $2)" \
    -c "INSERT INTO $1 SELECT i, $value FROM generate_series(1, 3000) i" \
    -c "INSERT INTO $1 VALUES (0, NULL)" \
    -c "CREATE TABLE q_$1 AS SELECT i AS id, $value AS v FROM generate_series(1, 50) i" \
    -c "CREATE INDEX ON $1 USING ivfflat (v $4) WITH (lists = 30)" >/dev/null
done

# record LIB LABEL: every index's results under three settings into results_LABEL.
record() {
  sql "$1" -c "DROP TABLE IF EXISTS results_$2; CREATE TABLE results_$2 (tbl text, cfg text, qid int, ids int[])"
  for spec in "${indexes[@]}"; do
    set -- "$1" "$2" $spec
    for cfg in "SET ivfflat.probes = 1;" "SET ivfflat.probes = 4;" \
      "SET ivfflat.probes = 1; SET ivfflat.iterative_scan = relaxed_order; SET ivfflat.max_probes = 3;"; do
      sql "$1" -c "SET enable_seqscan = off; $cfg
        INSERT INTO results_$2 SELECT '$3', '$cfg', q.id,
          array(SELECT t.id FROM $3 t WHERE t.id % 3 <> 0 ORDER BY t.v $5 q.v LIMIT 10) FROM q_$3 q"
    done
  done
}
# same LIB A B: fails unless results_A and results_B agree row for row.
same() {
  local n
  n=$(sql "$1" -c "SELECT count(*) FROM results_$2 a FULL JOIN results_$3 b USING (tbl, cfg, qid)
    WHERE a.ids IS DISTINCT FROM b.ids")
  [ "$n" = 0 ] || fail "$n queries differ between $2 and $3 (on $1)"
  n=$(sql "$1" -c "SELECT count(*) FROM results_$2 WHERE cardinality(ids) = 10")
  [ "$n" -ge 1000 ] || fail "only $n full results in $2"
}
# exact LIB: probes = lists gives the sequential scan's answer (ties broken by id). Cosine
# classes are left out: their index orders by the inner product of normalized values, which
# rounding can put in another order than the cosine distance of the query (on pgvector too).
exact() {
  for spec in "${indexes[@]}"; do
    set -- "$1" $spec
    [ "$4" = "<=>" ] && continue
    a=$(sql "$1" -c "SET enable_seqscan = off; SET ivfflat.probes = 30; SELECT md5(string_agg(x::text, ';' ORDER BY q)) FROM (
      SELECT q.id AS q, array(SELECT t.id FROM $2 t ORDER BY t.v $4 q.v, t.id LIMIT 10) AS x FROM q_$2 q) s")
    b=$(sql "$1" -c "SET enable_indexscan = off; SELECT md5(string_agg(x::text, ';' ORDER BY q)) FROM (
      SELECT q.id AS q, array(SELECT t.id FROM $2 t ORDER BY t.v $4 q.v, t.id LIMIT 10) AS x FROM q_$2 q) s")
    [ "$a" = "$b" ] || fail "$2 on $1: exact index scan differs from a sequential scan"
  done
}
# write LIB N: inserts (the queries' values again) and deletes, then VACUUM, on every table.
write() {
  local lib=$1 n=$2
  for spec in "${indexes[@]}"; do
    set -- $spec
    sql "$lib" -c "INSERT INTO $1 SELECT 10000 * $n + id, v FROM q_$1" \
      -c "INSERT INTO $1 SELECT 20000 * $n + id, v FROM $1 WHERE id % 97 = 0 AND id < 10000" \
      -c "DELETE FROM $1 WHERE id % 10 = $n" -c "VACUUM $1" >/dev/null
  done
}

record ours built
exact ours
stop ours
start pgvector
record pgvector built_on_pgvector
same pgvector built built_on_pgvector
exact pgvector
echo "built by ours: identical on pgvector ($(sql pgvector -c "SELECT count(*) FROM results_built") query runs)"
write pgvector 1
record pgvector written_by_pgvector
stop pgvector
start ours
record ours written_then_ours
same ours written_by_pgvector written_then_ours
exact ours
# Indexes pgvector changed pass our verifier, every row included.
sql ours -At -c "SELECT ivfflat_index_parent_check(indexrelid, true) FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE amname = 'ivfflat'" >/dev/null
echo "inserted into and vacuumed by pgvector: identical on ours"
write ours 2
record ours written_by_ours
stop ours
start pgvector
record pgvector written_by_ours_then_pgvector
same pgvector written_by_ours written_by_ours_then_pgvector
exact pgvector
echo "inserted into and vacuumed by ours: identical on pgvector"
