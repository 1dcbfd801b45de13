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
#     structural damage (all but the random kinds) reported by AM_index_parent_check, but the
#     kinds damage.py lists as the verifier's known gaps (printed as KNOWN GAP; STRICT=1 fails
#     them too).
#     Errors are counted per statement and printed.
#  4. Each search's answer (the ids, in order) is compared with the undamaged index's at the
#     same setting and checked against the table: 10 distinct rows in the order of their exact
#     distance. Outcomes are counted per kind: an error, the undamaged answer, another
#     well-formed answer, a malformed one; and whether the verifier (AM_index_parent_check,
#     without and with heapallindexed, or AM_index_check) flagged the case. With a quantized
#     hnsw index no malformed answer may come from a case the verifier passed: every candidate
#     is reranked by its exact distance from a vector whose hash its code record holds, so
#     damage the verifier cannot see (code bits, factors, the centroid) only steers the
#     search. (pgvector's format has no such hash: a changed value in an element orders its
#     row by that value, counted.)
#  5. hnsw: tests/hnsw/check_pages.py, run on the damaged file (server stopped), must report
#     every structural damage too, including the kinds the verifier is known to miss.
#  HNSW_OPTIONS (e.g. "quantization = 'rabitq4'", corrupt_pages_quantized.sh) is added to the
#  hnsw index's WITH; a quantized index gets the kinds of damage.py's hnsw-quantized (its
#  metapage's quantizer section, vector pages and code records besides pgvector's).
# Usage: tests/corrupt_pages.sh AM [WORKDIR] [CASES]   (AM hnsw or ivfflat; default 4 cases of
#        each kind)
set -euo pipefail
am=$1
work=${2:-$(mktemp -d /tmp/$am-corrupt.XXXXXX)}
. "$(dirname "$0")/lib.sh"
# The interpreter itself, not a version manager's shim: it runs twice per case.
py=$(python3 -c 'import sys; print(sys.executable)')
options=${HNSW_OPTIONS:-}
family=$am
quantized=0
case $am:$options in hnsw:*quantization*) family=hnsw-quantized quantized=1 ;; esac
read -r -a kinds <<<"$(python3 "$here/damage.py" --kinds "$family")"
read -r -a random_kinds <<<"$(python3 "$here/damage.py" --random-kinds "$family")"
# Structural kinds the verifier is known to miss: reported as KNOWN GAP, not failed (STRICT=1
# fails them too).
read -r -a known_gaps <<<"${DAMAGE_KNOWN_GAPS-$(python3 "$here/damage.py" --known-gaps "$family")}"
cases=${3:-$((4 * ${#kinds[@]}))}

case $am in
  hnsw)
    hnsw_damage_fixture 2000 0.5 "WITH (m = 4${options:+, $options})"
    settings=("SET hnsw.ef_search = 10" "SET hnsw.ef_search = 40" "SET hnsw.ef_search = 200") ;;
  ivfflat)
    rm -rf "$work/cluster"
    INITDB_OPTS="--no-data-checksums --wal-segsize=1" start ours
    sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.5)" -c "
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
if [ "$quantized" = 1 ]; then
  [ "$(sql ours -c "CREATE EXTENSION IF NOT EXISTS pageinspect" -c "SELECT encode(substring(get_raw_page('t_idx', 0) FROM 25 FOR 4), 'hex')")" = dec053a9 ] ||
    fail "t_idx is not quantized"
  sql ours -c "DROP EXTENSION pageinspect"
fi
[ "$am" != hnsw ] || sql ours -c "SELECT ctid FROM t" > "$work/ctids.pristine"
query="(SELECT v FROM t WHERE id = 17)"
# answer SETTING: the 10 ids the index returns at SETTING, in order.
answer_sql() {
  echo "SET enable_seqscan = off; $1; SELECT array(SELECT id FROM t ORDER BY v <-> $query LIMIT 10)"
}
# well_formed IDS: 10 distinct rows of t, in the order of their exact distance from the query.
well_formed_sql() {
  echo "SELECT count(*) = 10 AND count(DISTINCT u.x) = 10 AND bool_and(d >= p) FROM
    (SELECT u.x, t.v <-> $query AS d, lag(t.v <-> $query, 1, t.v <-> $query) OVER (ORDER BY u.o) AS p
       FROM unnest('$1'::int[]) WITH ORDINALITY u(x, o) JOIN t ON t.id = u.x) u"
}
pristine_answers=()
for setting in "${settings[@]}"; do
  a=$(sql ours -c "$(answer_sql "$setting")" | tail -1)
  [ "$(sql ours -c "$(well_formed_sql "$a")")" = t ] || fail "the undamaged index answers $a at $setting"
  pristine_answers+=("$a")
done
stop ours
rel_file=${file#"$data/"}
pristine=$work/pristine
rm -rf "$pristine" && cp -a "$data" "$pristine"

declare -A errors=() detected=() tried=() flagged=() by_check_pages=() search_error=() same=() other=() malformed=()
declare -A unflagged_bad=()
statements=0 slowest=0
# run NAME SQL...: one statement under the timeout; counts an ERROR under NAME.
run() {
  local name=$1; shift
  local t0 t1 out
  t0=$(date +%s%N)
  out=$(PGOPTIONS="-c statement_timeout=5s -c client_min_messages=warning" sql ours "$@" 2>&1) \
    || { errors[$name]=$(( ${errors[$name]:-0} + 1 )); last_error=$out; }
  last_output=$out
  t1=$(date +%s%N)
  local ms=$(( (t1 - t0) / 1000000 ))
  statements=$((statements + 1))
  [ "$ms" -gt "$slowest" ] && slowest=$ms
  [ "$ms" -le 10000 ] || fail "case $case ($what): $name took $ms ms"
  return 0
}

for ((case = 0; case < cases; case++)); do
  kind=${kinds[$((case % ${#kinds[@]}))]}
  rm -rf "$data" && cp -a "$pristine" "$data"
  what=$("$py" "$here/damage.py" "$data/$rel_file" "$kind" "$case")
  tried[$kind]=$(( ${tried[$kind]:-0} + 1 ))
  if [ "$am" = hnsw ]; then
    # The independent page checker on the damaged file.
    if "$py" "$here/hnsw/check_pages.py" "$data/$rel_file" "$work/ctids.pristine" --exact --raw > "$work/check_pages.out"; then
      echo "   case $case ($what): check_pages.py found nothing wrong"
    else
      by_check_pages[$kind]=$(( ${by_check_pages[$kind]:-0} + 1 ))
    fi
  fi
  start ours
  before=${errors[parent_check]:-0}
  run parent_check -c "SELECT ${am}_index_parent_check('t_idx')"
  if [ "${errors[parent_check]:-0}" -gt "$before" ]; then
    grep -q 'ERROR:  index "t_idx" is corrupted at block\|ERROR:  index "t_idx" contains\|ERROR:  invalid page' <<<"$last_error" \
      || fail "case $case ($what): the verifier failed otherwise: $last_error"
    detected[$kind]=$(( ${detected[$kind]:-0} + 1 ))
  fi
  run check -c "SELECT ${am}_index_check('t_idx')"
  run parent_check_heap -c "SELECT ${am}_index_parent_check('t_idx', true)"
  total_errors=0
  for name in parent_check check parent_check_heap; do total_errors=$((total_errors + ${errors[$name]:-0})); done
  case_flagged=0
  [ "$total_errors" -gt "${flagged_before:-0}" ] && case_flagged=1
  flagged_before=$total_errors
  [ "$case_flagged" = 0 ] || flagged[$kind]=$(( ${flagged[$kind]:-0} + 1 ))
  size=$(sql ours -c "SELECT pg_relation_size('t_idx')")
  for i in "${!settings[@]}"; do
    before=${errors[search]:-0}
    answer=""
    run search -c "$(answer_sql "${settings[$i]}")"
    if [ "${errors[search]:-0}" -gt "$before" ]; then
      search_error[$kind]=$(( ${search_error[$kind]:-0} + 1 ))
      continue
    fi
    answer=$(tail -1 <<<"$last_output")
    if [ "$answer" = "${pristine_answers[$i]}" ]; then
      same[$kind]=$(( ${same[$kind]:-0} + 1 ))
    elif [ "$(sql ours -c "$(well_formed_sql "$answer")")" = t ]; then
      other[$kind]=$(( ${other[$kind]:-0} + 1 ))
    else
      malformed[$kind]=$(( ${malformed[$kind]:-0} + 1 ))
      if [ "$case_flagged" = 0 ]; then
        unflagged_bad[$kind]=$(( ${unflagged_bad[$kind]:-0} + 1 ))
        echo "   case $case ($what): ${settings[$i]} answered $answer (undamaged: ${pristine_answers[$i]}), the verifier passed"
      fi
    fi
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
for name in parent_check check parent_check_heap search insert vacuum; do
  printf '   %-17s %s\n' "$name" "${errors[$name]:-0}"
done
echo "-- per kind: cases, reported by ${am}_index_parent_check, flagged by any verifier call$([ "$am" = hnsw ] && echo ", by check_pages.py");"
echo "   searches: errors, the undamaged answer, another well-formed one, malformed (unflagged)"
is_random() { local k; for k in "${random_kinds[@]}"; do [ "$k" = "$1" ] && return 0; done; return 1; }
is_known_gap() { local k; for k in "${known_gaps[@]}"; do [ "$k" = "$1" ] && return 0; done; return 1; }
missed=() gaps=() missed_by_check_pages=() totals=(0 0 0 0 0 0)
for kind in "${kinds[@]}"; do
  n=${tried[$kind]:-0}
  [ "$n" -gt 0 ] || continue
  e=${search_error[$kind]:-0}
  [ $((e + ${same[$kind]:-0} + ${other[$kind]:-0} + ${malformed[$kind]:-0})) = $((n * ${#settings[@]})) ] ||
    fail "$kind: the search outcomes do not add up to $((n * ${#settings[@]}))"
  printf '   %-26s %3s %3s %3s%s   %3s %3s %3s %3s (%s)\n' "$kind" "$n" "${detected[$kind]:-0}" "${flagged[$kind]:-0}" \
    "$([ "$am" = hnsw ] && printf ' %3s' "${by_check_pages[$kind]:-0}")" \
    "$e" "${same[$kind]:-0}" "${other[$kind]:-0}" "${malformed[$kind]:-0}" "${unflagged_bad[$kind]:-0}"
  totals=($((totals[0] + n)) $((totals[1] + ${detected[$kind]:-0})) $((totals[2] + e)) $((totals[3] + ${same[$kind]:-0}))
    $((totals[4] + ${other[$kind]:-0})) $((totals[5] + ${malformed[$kind]:-0})))
  # check_pages.py (hnsw) must see every structural damage, the verifier's known gaps too.
  [ "$am" != hnsw ] || is_random "$kind" || [ "${by_check_pages[$kind]:-0}" = "$n" ] || missed_by_check_pages+=("$kind")
  if ! is_random "$kind" && [ "${detected[$kind]:-0}" != "$n" ]; then
    if is_known_gap "$kind" && [ "${STRICT:-0}" != 1 ]; then gaps+=("$kind"); else missed+=("$kind"); fi
  elif is_known_gap "$kind"; then
    echo "   note: $kind, a known gap, was reported every time: take it off the known gaps"
  fi
done
echo "   total: ${totals[0]} cases, ${totals[1]} reported; searches: ${totals[2]} errors, ${totals[3]} undamaged answers, ${totals[4]} other well-formed, ${totals[5]} malformed"
[ "${totals[2]}" = "${errors[search]:-0}" ] || fail "${errors[search]:-0} search errors, ${totals[2]} counted per kind"
[ ${#gaps[@]} = 0 ] || echo "KNOWN GAP: the verifier missed damage of kinds ${gaps[*]} (tests/damage.py KNOWN_GAPS; STRICT=1 fails)"
[ ${#missed[@]} = 0 ] || fail "the verifier missed damage of kinds: ${missed[*]}"
[ ${#missed_by_check_pages[@]} = 0 ] || fail "check_pages.py missed damage of kinds: ${missed_by_check_pages[*]}"
unflagged=0
for kind in "${kinds[@]}"; do unflagged=$((unflagged + ${unflagged_bad[$kind]:-0})); done
if [ "$quantized" = 1 ]; then
  [ "$unflagged" = 0 ] || fail "$unflagged malformed answers from quantized indexes the verifier passed"
fi
echo "corrupt $am pages${options:+ ($options)}: ok (0 crashes, 0 hangs, every structural damage reported" \
  "${gaps[*]:+but the known gaps }by the verifier$([ "$am" = hnsw ] && echo " and all by check_pages.py")," \
  "$unflagged malformed answers the verifier did not flag)"
