#!/usr/bin/env bash
# Seeded page damage: whatever an hnsw or ivfflat index file holds, no backend dies, nothing
# runs past statement_timeout, a SELECT never grows the index, and the verifier reports what
# the format forbids.
#  1. A cluster without data checksums (they would catch every flip first): table t of 2,000
#     vector(8) rows and its index t_idx (hnsw with m = 4, or ivfflat with 20 lists), then
#     stopped and copied. The undamaged index passes the verifier, rows included.
#  2. For each case: the copy is restored, the index file damaged (tests/damage.py: one of its
#     kinds for the method in turn, seeded by the case number), the server started, and then
#     AM_index_parent_check, AM_index_check, three searches, an INSERT and a DELETE plus VACUUM
#     run, each under statement_timeout = 5s. Each may answer or raise an ERROR.
#  3. Asserted: no backend killed by a signal and no PANIC (server log), every statement done
#     within the timeout plus 5 seconds, the index's size unchanged by the searches, and every
#     structural damage (all but the three random kinds) reported by AM_index_parent_check.
#     Errors are counted per statement and printed.
# Usage: tests/corrupt_pages.sh AM [WORKDIR] [CASES]   (AM hnsw or ivfflat; default 4 cases of
#        each kind)
set -euo pipefail
am=$1
work=${2:-$(mktemp -d /tmp/$am-corrupt.XXXXXX)}
. "$(dirname "$0")/lib.sh"
read -r -a kinds <<<"$(python3 "$here/damage.py" --kinds "$am")"
cases=${3:-$((4 * ${#kinds[@]}))}

case $am in
  hnsw)
    hnsw_damage_fixture 2000 0.5 "WITH (m = 4)"
    settings=("SET hnsw.ef_search = 10" "SET hnsw.ef_search = 40" "SET hnsw.ef_search = 200") ;;
  ivfflat)
    rm -rf "$work/cluster"
    INITDB_OPTS=--no-data-checksums start ours
    sql ours -c "CREATE EXTENSION vector" -c "SELECT setseed(0.5)" -c "
      CREATE TABLE t (id int, v vector(8));
      INSERT INTO t SELECT i, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0)
        FROM generate_series(1, 2000) i;
      CREATE INDEX t_idx ON t USING ivfflat (v vector_l2_ops) WITH (lists = 20);
      CHECKPOINT;" >/dev/null
    file=$data/$(sql ours -c "SELECT pg_relation_filepath('t_idx')")
    stop ours
    settings=("SET ivfflat.probes = 1" "SET ivfflat.probes = 5"
              "SET ivfflat.probes = 1; SET ivfflat.iterative_scan = relaxed_order") ;;
  *) fail "unknown access method $am" ;;
esac
start ours
sql ours -c "SELECT ${am}_index_parent_check('t_idx', true)" -c "SELECT ${am}_index_check('t_idx', true)" >/dev/null
stop ours
rel_file=${file#"$data/"}
pristine=$work/pristine
rm -rf "$pristine" && cp -a "$data" "$pristine"

declare -A errors=() detected=() tried=()
statements=0 slowest=0
# run NAME SQL...: one statement under the timeout; counts an ERROR under NAME.
run() {
  local name=$1; shift
  local t0 t1 out
  t0=$(date +%s%N)
  out=$(PGOPTIONS="-c statement_timeout=5s -c client_min_messages=warning" sql ours "$@" 2>&1) \
    || { errors[$name]=$(( ${errors[$name]:-0} + 1 )); last_error=$out; }
  t1=$(date +%s%N)
  local ms=$(( (t1 - t0) / 1000000 ))
  statements=$((statements + 1))
  [ "$ms" -gt "$slowest" ] && slowest=$ms
  [ "$ms" -le 10000 ] || fail "case $case ($what): $name took $ms ms"
  return 0
}

query="(SELECT v FROM t WHERE id = 17)"
for ((case = 0; case < cases; case++)); do
  kind=${kinds[$((case % ${#kinds[@]}))]}
  rm -rf "$data" && cp -a "$pristine" "$data"
  what=$(python3 "$here/damage.py" "$data/$rel_file" "$kind" "$case")
  tried[$kind]=$(( ${tried[$kind]:-0} + 1 ))
  start ours
  before=${errors[parent_check]:-0}
  run parent_check -c "SELECT ${am}_index_parent_check('t_idx')"
  if [ "${errors[parent_check]:-0}" -gt "$before" ]; then
    grep -q 'ERROR:  index "t_idx" is corrupted at block\|ERROR:  index "t_idx" contains\|ERROR:  invalid page' <<<"$last_error" \
      || fail "case $case ($what): the verifier failed otherwise: $last_error"
    detected[$kind]=$(( ${detected[$kind]:-0} + 1 ))
  fi
  run check -c "SELECT ${am}_index_check('t_idx')"
  size=$(sql ours -c "SELECT pg_relation_size('t_idx')")
  for setting in "${settings[@]}"; do
    run search -c "SET enable_seqscan = off; $setting" \
      -c "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> $query LIMIT 10) s"
  done
  [ "$(sql ours -c "SELECT pg_relation_size('t_idx')")" = "$size" ] \
    || fail "case $case ($what): a search changed the index's size"
  run insert -c "INSERT INTO t SELECT 5000 + i, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0) FROM generate_series(1, 20) i"
  run vacuum -c "DELETE FROM t WHERE id % 10 = $((case % 10))" -c "VACUUM t"
  stop ours
  if grep -q 'terminated by signal\|PANIC' "$data.log"; then
    grep 'terminated by signal\|PANIC' "$data.log" | head -5
    fail "case $case ($what): a backend died"
  fi
done

echo "-- $cases cases, $statements statements, the slowest $slowest ms; errors raised (as expected for damaged pages):"
for name in parent_check check search insert vacuum; do
  printf '   %-13s %s\n' "$name" "${errors[$name]:-0}"
done
echo "-- damage reported by ${am}_index_parent_check, per kind:"
for kind in "${kinds[@]}"; do
  n=${tried[$kind]:-0}
  [ "$n" -gt 0 ] || continue
  printf '   %-24s %s of %s\n' "$kind" "${detected[$kind]:-0}" "$n"
  case $kind in
    random_bytes|run64|noise_page) ;;
    *) [ "${detected[$kind]:-0}" = "$n" ] || fail "$kind: the verifier missed ${kind} damage" ;;
  esac
done
echo "corrupt $am pages: ok (0 crashes, 0 hangs, every structural damage reported)"
