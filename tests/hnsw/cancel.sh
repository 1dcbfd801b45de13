#!/usr/bin/env bash
# Cancellation: a statement_timeout and a pg_cancel_backend each stop a long hnsw build (graph
# in memory, and past maintenance_work_mem on disk), a long iterative scan (relaxed and strict
# order), a long INSERT and a long VACUUM. Each statement must end within 5 s (bound_ms) of its
# cancel (a bound on a hang, not a speed test) and leave an index the verifier accepts.
#  1. t (id int, v vector(64)): 60,000 random rows, autovacuum off.
#  2. CREATE INDEX (m = 16, ef_construction = 200; about a minute when not cancelled), with
#     maintenance_work_mem = 512MB (the graph stays in memory) and = 1MB (the build goes on
#     disk, as its NOTICE says): each once cancelled by statement_timeout, once by
#     pg_cancel_backend. No index is left behind, the table keeps its rows, and a retry
#     (m = 8, ef_construction = 16) builds t_idx.
#  3. Iterative scans with a filter that matches nothing (hnsw.max_scan_tuples and work_mem
#     high, ef_search = 1000: every scan walks the whole graph), one per outer row of a LATERAL
#     join of 300 rows (about a minute), relaxed_order under statement_timeout, strict_order
#     under pg_cancel_backend.
#  4. INSERT ... SELECT of 200,000 rows (about two minutes), both ways; the table keeps its
#     rows.
#  5. A third of the rows deleted, then VACUUM, both ways, cancelled while vacuuming the index;
#     then a VACUUM that is let finish.
#  Every statement runs 1.5 s (delay_ms) before its cancel (its backend is found in pg_stat_activity
#  by application name, query text and state active; the build's and the vacuum's progress
#  phase is checked just before the cancel), must fail with the cancel's own message, and must
#  end within 5 s of the cancel. After each: hnsw_index_parent_check(heapallindexed)
#  (steps 3-5). At the end, no backend was killed by a signal.
# Usage: tests/hnsw/cancel.sh [WORKDIR]   (OURS=..., PORT_OURS; under a minute)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-cancel.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

delay_ms=1500  # how long each statement runs before it is cancelled
bound_ms=5000  # how soon after its cancel it must have ended
cancels=0
worst=0

now_ms() { date +%s%3N; }
sleep_until() {
  local d=$(($1 - $(now_ms)))
  if [ "$d" -gt 0 ]; then sleep "$((d / 1000)).$(printf %03d $((d % 1000)))"; fi
}

# cancelled HOW LABEL PATTERN PHASE_SQL PHASE SETTINGS STATEMENT: runs SETTINGS (SET commands)
# then STATEMENT in a background session, and cancels STATEMENT once it has run $delay_ms:
# HOW = timeout by statement_timeout, HOW = cancel by pg_cancel_backend. PATTERN (LIKE) matches
# STATEMENT's text in pg_stat_activity; PHASE_SQL ({pid} stands for the backend) must return
# PHASE just before the cancel. The session's output goes to $work/LABEL.out.
cancelled() {
  local how=$1 label=$2 pattern=$3 phase_sql=$4 want_phase=$5 settings=$6 stmt=$7
  local out=$work/$label.out extra="" message row pid started cancel_at phase t0 t1 bg i rc
  case "$how" in
  timeout) extra="SET statement_timeout = '${delay_ms}ms';"
    message="canceling statement due to statement timeout" ;;
  cancel) message="canceling statement due to user request" ;;
  esac
  PGAPPNAME=cancel-$label PGOPTIONS="-c client_min_messages=notice" \
    sql ours -c "$settings $extra" -c "$stmt" >"$out" 2>&1 &
  bg=$!
  row=""
  for ((i = 0; i < 400; i++)); do
    row=$(sql ours -c "SELECT pid, round(extract(epoch FROM query_start) * 1000)
      FROM pg_stat_activity WHERE application_name = 'cancel-$label' AND state = 'active'
        AND query LIKE '$pattern'")
    [ -n "$row" ] && break
    kill -0 "$bg" 2>/dev/null || break
    sleep 0.02
  done
  if [ -z "$row" ]; then
    wait "$bg" || true
    fail "$label: never found the statement running: $(cat "$out")"
  fi
  IFS='|' read -r pid started <<<"$row"
  cancel_at=$((started + delay_ms))
  sleep_until $((cancel_at - 300))
  phase=$(sql ours -c "${phase_sql//\{pid\}/$pid}")
  # On a loaded machine the sample may come after the timeout fired: the phase is then unknown.
  if [ "$how" = timeout ] && [ -z "$phase" ] && [ "$(now_ms)" -ge "$cancel_at" ]; then
    phase="$want_phase (sampled late)"
  fi
  [ "${phase% (sampled late)}" = "$want_phase" ] || {
    sql ours -c "SELECT pg_cancel_backend($pid)" >/dev/null
    wait "$bg" || true
    fail "$label: just before the cancel the statement was in '$phase', not '$want_phase': $(cat "$out")"
  }
  if [ "$how" = cancel ]; then
    sleep_until "$cancel_at"
    t0=$(now_ms)
    [ "$(sql ours -c "SELECT pg_cancel_backend($pid)")" = t ] || fail "$label: pg_cancel_backend($pid) failed"
  else
    t0=$cancel_at
  fi
  # Wait for the session to end: a minute at most (to report how long a late one took).
  while kill -0 "$bg" 2>/dev/null && [ $(($(now_ms) - t0)) -lt 60000 ]; do sleep 0.01; done
  t1=$(now_ms)
  if kill -0 "$bg" 2>/dev/null; then
    sql ours -c "SELECT pg_terminate_backend($pid)" >/dev/null || true
    wait "$bg" || true
    fail "$label: still running $((t1 - t0)) ms after its cancel ($how); terminated: $(cat "$out")"
  fi
  rc=0
  wait "$bg" || rc=$?
  [ "$rc" != 0 ] || fail "$label: the statement was not cancelled, it completed: $(cat "$out")"
  grep -qF "ERROR:  $message" "$out" || fail "$label: not cancelled ($how) but: $(cat "$out")"
  [ $((t1 - t0)) -le "$bound_ms" ] ||
    fail "$label: ended $((t1 - t0)) ms after its cancel ($how), more than $bound_ms ms"
  cancels=$((cancels + 1))
  [ $((t1 - t0)) -le "$worst" ] || worst=$((t1 - t0))
  echo "$label: cancelled by $how after $((cancel_at - started)) ms in '$phase', ended $((t1 - t0)) ms later"
}

verify() {
  local out
  out=$(sql ours -c "SELECT hnsw_index_parent_check('t_idx', true)" 2>&1) || fail "$1: the verifier: $out"
}

rows_are() {
  local n
  n=$(sql ours -c "SELECT count(*) FROM t")
  [ "$n" = "$2" ] || fail "$1: t holds $n rows, not $2"
}

start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.41)" -c "
  CREATE TABLE t (id int, v vector(64)) WITH (autovacuum_enabled = off);
  INSERT INTO t SELECT i, array(SELECT random()::real FROM generate_series(1, 64) WHERE i > 0)
    FROM generate_series(1, 60000) i;
  ANALYZE t;" >/dev/null

# 2. Builds.
build_phase="SELECT phase FROM pg_stat_progress_create_index WHERE pid = {pid}"
build="CREATE INDEX t_idx ON t USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 200)"
for how in timeout cancel; do
  for mem in 512MB 1MB; do
    cancelled "$how" "build-$mem-$how" 'CREATE INDEX%' "$build_phase" "building index: loading tuples" \
      "SET maintenance_work_mem = '$mem';" "$build"
    if [ "$mem" = 1MB ]; then
      grep -q "hnsw graph no longer fits into maintenance_work_mem" "$work/build-$mem-$how.out" ||
        fail "build-$mem-$how: the build never went on disk: $(cat "$work/build-$mem-$how.out")"
    else
      ! grep -q "no longer fits" "$work/build-$mem-$how.out" ||
        fail "build-$mem-$how: the build went on disk: $(cat "$work/build-$mem-$how.out")"
    fi
    left=$(sql ours -c "SELECT count(*) FROM pg_class WHERE relname = 't_idx'")
    [ "$left" = 0 ] || fail "build-$mem-$how: the cancelled build left an index behind"
    rows_are "build-$mem-$how" 60000
  done
done
sql ours -c "SET maintenance_work_mem = '512MB'" \
  -c "CREATE INDEX t_idx ON t USING hnsw (v vector_l2_ops) WITH (m = 8, ef_construction = 16)"
verify "retried build"
echo "retried build: t_idx built, verifier clean"

# 3. Iterative scans.
active="SELECT state FROM pg_stat_activity WHERE pid = {pid}"
scan_settings="SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0;
  SET work_mem = '1GB'; SET hnsw.ef_search = 1000; SET hnsw.max_scan_tuples = 2147483647;"
scan="SELECT count(*) FROM t q, LATERAL (SELECT d.id FROM t d WHERE d.id < 0
  ORDER BY d.v <-> q.v LIMIT 10) x WHERE q.id % 200 = 0"
plan=$(sql ours -c "$scan_settings" -c "EXPLAIN (COSTS OFF) $scan")
grep -q "Index Scan using t_idx" <<<"$plan" || fail "the scan does not use the index: $plan"
cancelled timeout scan-relaxed-timeout 'SELECT count(*) FROM t q%' "$active" active \
  "$scan_settings SET hnsw.iterative_scan = relaxed_order;" "$scan"
verify scan-relaxed-timeout
cancelled cancel scan-strict-cancel 'SELECT count(*) FROM t q%' "$active" active \
  "$scan_settings SET hnsw.iterative_scan = strict_order;" "$scan"
verify scan-strict-cancel

# 4. Inserts.
insert="INSERT INTO t SELECT 100000 + i,
  array(SELECT random()::real FROM generate_series(1, 64) WHERE i > 0) FROM generate_series(1, 200000) i"
for how in timeout cancel; do
  cancelled "$how" "insert-$how" 'INSERT INTO t%' "$active" active "" "$insert"
  rows_are "insert-$how" 60000
  verify "insert-$how"
done

# 5. Vacuums.
sql ours -c "DELETE FROM t WHERE id % 3 = 0" >/dev/null
vacuum_phase="SELECT phase FROM pg_stat_progress_vacuum WHERE pid = {pid}"
for how in timeout cancel; do
  cancelled "$how" "vacuum-$how" 'VACUUM%' "$vacuum_phase" "vacuuming indexes" "" "VACUUM t"
  rows_are "vacuum-$how" 40000
  verify "vacuum-$how"
done
t0=$(now_ms)
sql ours -c "VACUUM t"
verify "vacuum let finish"
rows_are "vacuum let finish" 40000
echo "vacuum let finish: $(($(now_ms) - t0)) ms, verifier clean"

[ "$cancels" = 10 ] || fail "$cancels of 10 statements were cancelled"
grep -q 'terminated by signal' "$data.log" && fail "a backend was killed by a signal"
echo "cancel: ok ($cancels statements cancelled, each ended within $worst ms of its cancel, verifier clean)"
