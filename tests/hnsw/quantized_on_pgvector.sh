#!/usr/bin/env bash
# Back to pgvector with a quantized index: a cluster our library wrote, with quantized hnsw
# indexes (WITH (quantization = ...)) beside pgvector-format ones, restarted on pristine
# pgvector 0.8.6 (the swap back a user makes when leaving our library).
#  1. On our library: table t (vector(16)) with a quantized index t_q (vector_l2_ops, rabitq4)
#     and a pgvector-format index t_ip (vector_ip_ops) on the same column; table h
#     (halfvec(16)) with a quantized h_q (halfvec_cosine_ops, rabitq1); table n with a
#     pgvector-format n_idx (vector_l2_ops). Autovacuum off. The verifier passes on all four;
#     the answers of t_ip and n_idx to 20 queries are recorded.
#  2. The same data directory on pgvector 0.8.6. Each of these must fail with exactly
#     pgvector's "ERROR:  hnsw index is not valid" (its metapage magic number check): an
#     ORDER BY <-> on t (t_q is the only index for it: the planner's cost estimate reads the
#     metapage), the same on h with <=>, an INSERT into t, an INSERT into h, and a VACUUM of t
#     after a DELETE (INDEX_CLEANUP ON, so that the index is vacuumed; the error's context
#     names t_q). After each: the server
#     is up, no backend died (server log), and t_ip and n_idx (their plans checked) answer as
#     they did on our library. The rows the failed INSERTs tried to add are not in the tables.
#  3. REINDEX INDEX t_q and h_q on pgvector: pgvector-format indexes (its magic number) that
#     answer the queries at ef_search = 1000 as a sequential scan does (the tables have 800
#     rows) and take an INSERT and a VACUUM.
#  4. Back on our library: the reindexed indexes (pgvector's format, the quantization option
#     still in their reloptions) pass the verifier and give pgvector's answers; REINDEX makes
#     them quantized again (our magic number), and they still answer as a sequential scan.
# Usage: tests/hnsw/quantized_on_pgvector.sh [WORKDIR]   (OURS=..., PGVECTOR=..., ports)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-quantized-on-pgvector.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
invalid="ERROR:  hnsw index is not valid"

# magic LIB INDEX: the metapage's magic number bytes (hex, as stored).
magic() { sql "$1" -c "SELECT encode(substring(get_raw_page('$2', 0) FROM 25 FOR 4), 'hex')"; }
# answers LIB TABLE OPERATOR OUT [SETTINGS]: the 10 nearest ids of every query, by index.
answers() {
  results_with "$1" "$2" "$3" "${5:-} SET client_min_messages = warning;" "$4"
}
# exact LIB TABLE OPERATOR OUT: the same by a sequential scan.
exact() {
  sql "$1" -c "SET enable_indexscan = off; SET enable_bitmapscan = off; DROP TABLE IF EXISTS $4;
    CREATE TABLE $4 AS SELECT q.id AS qid, array(SELECT t.id FROM $2 t ORDER BY t.v $3 q.v LIMIT 10) AS ids
    FROM queries q"
}
# plan_uses LIB INDEX QUERY: the plan of QUERY (index scans only) names INDEX.
plan_uses() {
  local plan
  plan=$(sql "$1" -c "SET enable_seqscan = off" -c "EXPLAIN (COSTS OFF) $3")
  grep -q "Index Scan using $2 on" <<< "$plan" || fail "the plan does not use $2: $plan"
}
# alive LIB: the server answers and no backend died.
alive() {
  [ "$(sql "$1" -c "SELECT 1")" = 1 ] || fail "the server does not answer"
  if grep -q 'terminated by signal\|PANIC\|server process .* was terminated' "$data.log"; then
    grep 'terminated by signal\|PANIC\|was terminated' "$data.log" | head -5
    fail "a backend died"
  fi
}
# normal_ones_answer LIB: t_ip and n_idx answer as on our library, with the plans using them.
normal_ones_answer() {
  plan_uses "$1" t_ip "SELECT id FROM t ORDER BY v <#> (SELECT v FROM queries WHERE id = 1) LIMIT 10"
  plan_uses "$1" n_idx "SELECT id FROM n ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10"
  answers "$1" t "<#>" now_t_ip
  answers "$1" n "<->" now_n
  [ "$(differing "$1" ours_t_ip now_t_ip)" = 0 ] || fail "t_ip answers differently than on our library"
  [ "$(differing "$1" ours_n now_n)" = 0 ] || fail "n_idx answers differently than on our library"
}
# must_be_invalid LABEL SQL...: the statements fail with exactly pgvector's error (and, with
# CONTEXT set, that context line).
must_be_invalid() {
  local label=$1 out want=$invalid
  shift
  [ -z "${CONTEXT:-}" ] || want+=$'\n'"CONTEXT:  $CONTEXT"
  if out=$(PGOPTIONS="-c client_min_messages=warning -c statement_timeout=30s" sql pgvector "$@" 2>&1); then
    fail "$label succeeded on pgvector: $out"
  fi
  [ "$out" = "$want" ] || fail "$label: expected \"$want\", got: $out"
  alive pgvector
  normal_ones_answer pgvector
  echo "   $label: ${out//$'\n'/ } (server up, t_ip and n_idx answer as before)"
}

echo "-- our library: quantized and pgvector-format indexes"
start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "CREATE EXTENSION pageinspect" -c "SELECT setseed(0.77)" -c "
  CREATE TABLE t (id int, v vector(16)) WITH (autovacuum_enabled = off);
  INSERT INTO t SELECT i, array(SELECT random() - 0.5 FROM generate_series(1, 16) WHERE i > 0)
    FROM generate_series(1, 800) i;
  CREATE TABLE h (id int, v halfvec(16)) WITH (autovacuum_enabled = off);
  INSERT INTO h SELECT id, v::halfvec FROM t;
  CREATE TABLE n (id int, v vector(16)) WITH (autovacuum_enabled = off);
  INSERT INTO n SELECT id, v FROM t;
  CREATE TABLE queries (id int, v vector(16));
  INSERT INTO queries SELECT i, array(SELECT random() - 0.5 FROM generate_series(1, 16) WHERE i > 0)
    FROM generate_series(1, 20) i;
  CREATE INDEX t_q ON t USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
  CREATE INDEX t_ip ON t USING hnsw (v vector_ip_ops);
  CREATE INDEX h_q ON h USING hnsw (v halfvec_cosine_ops) WITH (quantization = 'rabitq1');
  CREATE INDEX n_idx ON n USING hnsw (v vector_l2_ops);
  ANALYZE;" >/dev/null
for index in t_q h_q; do [ "$(magic ours $index)" = dec053a9 ] || fail "$index is not quantized"; done
for index in t_ip n_idx; do [ "$(magic ours $index)" = 53a953a9 ] || fail "$index is not in pgvector's format"; done
for index in t_q t_ip h_q n_idx; do sql ours -c "SELECT hnsw_index_parent_check('$index', true)" >/dev/null; done
answers ours t "<#>" ours_t_ip
answers ours n "<->" ours_n
plan_uses ours t_q "SELECT id FROM t ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10"
plan_uses ours h_q "SELECT id FROM h ORDER BY v <=> (SELECT v FROM queries WHERE id = 1)::halfvec LIMIT 10"
rows_t=$(sql ours -c "SELECT count(*) FROM t")
rows_h=$(sql ours -c "SELECT count(*) FROM h")
stop ours
echo "   t_q, h_q (quantized), t_ip, n_idx (pgvector's format): verifier clean, answers recorded"

echo "-- the same data directory on pgvector 0.8.6"
start pgvector
alive pgvector
normal_ones_answer pgvector
must_be_invalid "ORDER BY <-> on t (t_q)" -c "SET enable_seqscan = off" \
  -c "SELECT id FROM t ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10"
must_be_invalid "EXPLAIN of it" -c "EXPLAIN SELECT id FROM t ORDER BY v <-> '[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]' LIMIT 10"
must_be_invalid "ORDER BY <=> on h (h_q)" -c "SET enable_seqscan = off" \
  -c "SELECT id FROM h ORDER BY v <=> (SELECT v FROM queries WHERE id = 1)::halfvec LIMIT 10"
must_be_invalid "INSERT INTO t" -c "INSERT INTO t VALUES (9001, array_fill(0.25, ARRAY[16])::vector)"
must_be_invalid "INSERT INTO h" -c "INSERT INTO h VALUES (9001, array_fill(0.25, ARRAY[16])::halfvec)"
# Rows none of t_ip's recorded answers holds, so that they stay its answers.
deleted=$(sql pgvector -c "WITH d AS (DELETE FROM t WHERE id % 10 = 0
  AND id NOT IN (SELECT unnest(ids) FROM ours_t_ip) RETURNING 1) SELECT count(*) FROM d")
[ "$deleted" -gt 50 ] || fail "only $deleted rows deleted"
CONTEXT='while vacuuming index "t_q" of relation "public.t"' \
  must_be_invalid "VACUUM t (after a DELETE)" -c "VACUUM (INDEX_CLEANUP ON) t"
[ "$(sql pgvector -c "SELECT count(*) FROM t WHERE id = 9001")" = 0 ] || fail "the failed INSERT left a row in t"
[ "$(sql pgvector -c "SELECT count(*) FROM h")" = "$rows_h" ] || fail "h changed"
[ "$(sql pgvector -c "SELECT count(*) FROM t")" = "$((rows_t - deleted))" ] || fail "t does not hold its rows less the deleted ones"

echo "-- REINDEX on pgvector"
sql pgvector -c "REINDEX INDEX t_q" -c "REINDEX INDEX h_q"
for index in t_q h_q; do [ "$(magic pgvector $index)" = 53a953a9 ] || fail "$index was not rebuilt in pgvector's format"; done
plan_uses pgvector t_q "SELECT id FROM t ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10"
plan_uses pgvector h_q "SELECT id FROM h ORDER BY v <=> (SELECT v FROM queries WHERE id = 1)::halfvec LIMIT 10"
sql pgvector -c "DROP TABLE IF EXISTS hq; CREATE TABLE hq AS SELECT id, v::halfvec AS hv FROM queries"
# exact_check LIB LABEL: both rebuilt indexes answer as a sequential scan at ef_search 1000.
exact_check() {
  local d
  answers "$1" t "<->" idx_t "SET hnsw.ef_search = 1000;"
  exact "$1" t "<->" exact_t
  d=$(differing "$1" idx_t exact_t)
  [ "$d" = 0 ] || fail "$2: t_q answers $d of 20 queries unlike a sequential scan"
  sql "$1" -c "SET enable_seqscan = off; SET hnsw.ef_search = 1000; DROP TABLE IF EXISTS idx_h;
    CREATE TABLE idx_h AS SELECT q.id AS qid, array(SELECT h.id FROM h ORDER BY h.v <=> q.hv LIMIT 10) AS ids FROM hq q"
  sql "$1" -c "SET enable_indexscan = off; SET enable_bitmapscan = off; DROP TABLE IF EXISTS exact_h;
    CREATE TABLE exact_h AS SELECT q.id AS qid, array(SELECT h.id FROM h ORDER BY h.v <=> q.hv, h.id LIMIT 10) AS ids FROM hq q"
  d=$(differing "$1" idx_h exact_h)
  [ "$d" = 0 ] || fail "$2: h_q answers $d of 20 queries unlike a sequential scan"
}
exact_check pgvector "rebuilt by pgvector"
sql pgvector -c "INSERT INTO t VALUES (9002, array_fill(0.25, ARRAY[16])::vector)" \
  -c "INSERT INTO h VALUES (9002, array_fill(0.25, ARRAY[16])::halfvec)" \
  -c "DELETE FROM t WHERE id % 10 = 1" -c "VACUUM (INDEX_CLEANUP ON) t" -c "VACUUM (INDEX_CLEANUP ON) h"
alive pgvector
exact_check pgvector "after an INSERT and a VACUUM on pgvector"
answers pgvector t "<->" pgv_t "SET hnsw.ef_search = 40;"
echo "   t_q and h_q rebuilt in pgvector's format: exact at ef_search 1000, INSERT and VACUUM work"
stop pgvector

echo "-- back on our library"
start ours
for index in t_q h_q; do
  sql ours -c "SELECT hnsw_index_parent_check('$index', true)" >/dev/null
  [ "$(magic ours $index)" = 53a953a9 ] || fail "$index changed format"
done
answers ours t "<->" ours_pgv_t "SET hnsw.ef_search = 40;"
[ "$(differing ours pgv_t ours_pgv_t)" = 0 ] || fail "our library answers differently than pgvector on its rebuilt t_q"
sql ours -c "REINDEX INDEX t_q" -c "REINDEX INDEX h_q"
for index in t_q h_q; do
  [ "$(magic ours $index)" = dec053a9 ] || fail "$index is not quantized again after REINDEX on our library"
  sql ours -c "SELECT hnsw_index_parent_check('$index', true)" >/dev/null
done
exact_check ours "quantized again"
stop ours
echo "OK: pgvector refuses our quantized indexes cleanly, and rebuilds them ($work)"
