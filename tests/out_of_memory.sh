#!/usr/bin/env bash
# Out of memory: under an address-space limit (ulimit -v on the postmaster, inherited by every
# backend), statements that want more memory than the server may have either finish within
# what is left or raise an ERROR; no backend aborts, and the server stays up.
#  1. A server whose processes may map 330 MB (about 170 MB of it is the server itself), with a
#     table of 60,000 vector(1000) rows (240 MB of values).
#  2. maintenance_work_mem = 2GB, so no limit of ours stops the builds first:
#     * an hnsw build: its graph cannot stay in memory, so it must go on in the pages (the
#       NOTICE "no longer fits into memory") and give an index the verifier accepts, rows
#       included; it used to abort the backend ("memory allocation failed"), and with it the
#       whole server;
#     * ivfflat builds with 100 and 1,000 lists: an index the verifier accepts, or ERROR
#       "out of memory".
#  3. work_mem = 2GB: an iterative hnsw scan that walks the whole graph and a sort of every
#     row by distance: an answer or ERROR "out of memory".
#  4. Asserted: no "terminated by signal" in the server log, the server answers at the end,
#     and every statement ended in one of the outcomes above (each is counted).
# Usage: tests/out_of_memory.sh [WORKDIR]   (OURS=..., PORT_OURS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/vector-oom.XXXXXX)}
. "$(dirname "$0")/lib.sh"
limit_kb=${OOM_LIMIT_KB:-330000}
rm -rf "$work/cluster"
# An initialized cluster, then restarted under the limit.
start ours
stop ours
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
as_postgres bash -c "ulimit -v $limit_kb; '$OURS/bin/pg_ctl' -D '$data' -w -l '$data.log' \
  -o \"-p $PORT_OURS -k $work/cluster -c listen_addresses=''\" start" >/dev/null
running=ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "
  CREATE TABLE t AS SELECT i AS id, array_fill(i::real, ARRAY[1000])::vector(1000) AS v
    FROM generate_series(1, 60000) i" >/dev/null

declare -A outcome=()
# attempt NAME SQL...: an answer ("ok") or ERROR out of memory ("oom"); anything else fails.
attempt() {
  local name=$1 out; shift
  if out=$(PGOPTIONS="-c client_min_messages=notice" sql ours -c "SET maintenance_work_mem = '2GB'" \
      -c "SET work_mem = '2GB'" -c "SET max_parallel_maintenance_workers = 0" "$@" 2>&1); then
    outcome[$name]=ok
  elif grep -q "ERROR:  out of memory" <<<"$out"; then
    outcome[$name]=oom
  else
    fail "$name: $out"
  fi
  last=$out
}

attempt hnsw_build -c "CREATE INDEX t_hnsw ON t USING hnsw (v vector_l2_ops) WITH (m = 2, ef_construction = 4)"
[ "${outcome[hnsw_build]}" = ok ] || fail "the hnsw build did not finish: $last"
grep -q "hnsw graph no longer fits into memory" <<<"$last" || fail "the hnsw build kept its graph in memory: $last"
sql ours -c "SELECT hnsw_index_parent_check('t_hnsw', true)" >/dev/null
attempt ivfflat_100 -c "CREATE INDEX t_ivf100 ON t USING ivfflat (v vector_l2_ops) WITH (lists = 100)"
[ "${outcome[ivfflat_100]}" = oom ] || sql ours -c "SELECT ivfflat_index_parent_check('t_ivf100', true)" >/dev/null
attempt ivfflat_1000 -c "CREATE INDEX t_ivf1000 ON t USING ivfflat (v vector_l2_ops) WITH (lists = 1000)"
[ "${outcome[ivfflat_1000]}" = oom ] || sql ours -c "SELECT ivfflat_index_parent_check('t_ivf1000', true)" >/dev/null
sql ours -c "DROP INDEX IF EXISTS t_ivf100, t_ivf1000" >/dev/null
attempt iterative_scan -c "SET enable_seqscan = off; SET hnsw.ef_search = 1000;
  SET hnsw.iterative_scan = relaxed_order; SET hnsw.max_scan_tuples = 1000000" \
  -c "SELECT count(*) FROM (SELECT id FROM t WHERE id < 0 ORDER BY v <-> (SELECT v FROM t WHERE id = 5) LIMIT 10) s"
attempt sort_all -c "SET enable_indexscan = off" \
  -c "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 5)) s"

grep -q 'terminated by signal' "$data.log" && { grep 'terminated by signal' "$data.log" | head -3; fail "a backend died"; }
[ "$(sql ours -c "SELECT 1")" = 1 ] || fail "the server does not answer"
summary=$(for k in hnsw_build ivfflat_100 ivfflat_1000 iterative_scan sort_all; do printf '%s=%s ' "$k" "${outcome[$k]}"; done)
echo "out of memory: ok (${summary% }; no backend aborted)"
