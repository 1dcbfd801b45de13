#!/usr/bin/env bash
# Soak: 8 concurrent sessions insert, update, delete, search (plain and iterative) and VACUUM an
# hnsw-indexed table for SECONDS; the same seeded workload runs on our library and on pristine
# pgvector 0.8.6, each on a fresh cluster (autovacuum on, as in production).
#  1. Table t (id bigint primary key, cat int, v vector(16)): 8000 seeded rows, hnsw index t_idx
#     (vector_l2_ops, m 8, ef_construction 32). 300 fixed queries; recall@10 at ef_search 40
#     against brute force (sequential scan, tests/lib.sh `truth`). The sessions' queries must
#     use t_idx (EXPLAIN).
#  2. The sessions, each one psql fed by a seeded generator (written by this script) in chunks
#     of 250 statements that reconnect (\connect) first; chunk K of a role is the same on both
#     libraries. Every statement is followed by a clock check: psql quits at the deadline.
#       ins1, ins2  single-row INSERTs with ids of their own;
#       upd         UPDATEs of v and cat: random original rows (one in ten sets v to NULL), an
#                   inserter's newest row, a recent row of a residue class;
#       del         DELETEs of the 5 oldest / 5 newest rows of a residue class, and of random
#                   original rows, each only while the table holds more than 8000 rows (its
#                   size, hence its recall, does not depend on the sessions' speeds);
#       srch1/2     plain index searches (ef_search 40 LIMIT 10, ef_search 100 LIMIT 20, also
#                   by a row's own value);
#       iter        iterative searches (hnsw.iterative_scan = relaxed_order) with a filter on
#                   cat (10% and 5% of the rows);
#       vac         VACUUM (plain, INDEX_CLEANUP ON, PARALLEL 2), ANALYZE, short sleeps.
#     Every psql runs with ON_ERROR_STOP off; its stderr goes to a file per session.
#  3. Afterwards: every ERROR line of every session is counted; none is expected (the workload
#     has no conflicting keys and no lock cycles), so ours must have 0, and no WARNING either,
#     no psql exit other than 0; pgvector's counts are reported. No backend may have been
#     terminated by a signal, and ours' log may not report a leaked resource.
#  4. Autovacuum is turned off; once pg_stat_activity shows no other client backend and no
#     autovacuum worker, pg_buffercache must show no pinned buffer (re-read a few times: the
#     checkpointer and background writer pin buffers for a moment). Checked again at the end.
#  5. VACUUM t, then (ours) hnsw_index_parent_check('t_idx', true): pages, links, and every
#     visible heap row in the index. Recall@10 is measured again against the new brute force.
#     Ours' recall drop must not exceed pgvector's by more than 0.02.
# Searches that return fewer rows than their LIMIT are reported ("short"), not asserted: a plain
# (non-iterative) scan legitimately can when dead rows fill ef_search.
# Usage: tests/hnsw/soak.sh [WORKDIR] [SECONDS]   (default 20; a long run: tests/hnsw/soak.sh
#        /tmp/soak 300)   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-soak.XXXXXX)}
seconds=${2:-20}
. "$(dirname "$0")/../lib.sh"
rows=8000
tolerance=0.02
roles=(ins1 ins2 upd del srch1 srch2 iter vac)

# gen.py ROLE DEADLINE ROWS COPY: ROLE's statements, endlessly, in chunks of 250 units (chunk K
# seeded by ROLE and K, so the same on both libraries); each chunk reconnects (\connect) and is
# also written to the file COPY. psql stops reading at the deadline.
cat > "$work/gen.py" <<'PY'
import itertools, os, random, sys
role, deadline, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
copy = open(sys.argv[4], "w")
def chunk(k):
    rnd = random.Random(f"soak-{role}-{k}")
    def vec():
        return "'[" + ",".join(f"{rnd.uniform(-1, 1):.4f}" for _ in range(16)) + "]'"
    out = ["\\o /dev/null"] + (["\\connect"] if k else [])
    if role.startswith("srch") or role == "iter":
        out.append("SET enable_seqscan = off;")
        out.append("SET hnsw.ef_search = %d;" % (100 if role == "srch2" else 40))
    if role == "iter":
        out.append("SET hnsw.iterative_scan = relaxed_order;")
    def search(limit, sub):
        # Counts the rows (no output); a result shorter than LIMIT prints "short".
        out.append(f"SELECT count(*) < {limit} AS short FROM ({sub} LIMIT {limit}) s \\gset")
        out.append("\\if :short\n\\echo short\n\\endif")
    for i in range(250):
        if role in ("ins1", "ins2"):
            s = int(role[-1])
            out.append(f"INSERT INTO t (id, cat, v) VALUES "
                       f"({s * 100_000_000 + k * 1000 + i}, {rnd.randrange(10)}, {vec()});")
        elif role == "upd":
            x, r = rnd.randint(1, rows), rnd.random()
            if r < 0.1:
                out.append(f"UPDATE t SET v = NULL WHERE id = {x};")
            elif r < 0.3:
                s = rnd.choice((1, 2))
                out.append(f"UPDATE t SET v = {vec()} WHERE id = (SELECT max(id) FROM t "
                           f"WHERE id BETWEEN {s * 100_000_000} AND {s * 100_000_000 + 99_999_999});")
            elif r < 0.5:
                out.append(f"UPDATE t SET v = {vec()}, cat = {rnd.randrange(10)} WHERE id = (SELECT id FROM t "
                           f"WHERE id % 31 = {rnd.randrange(31)} ORDER BY id DESC OFFSET {rnd.randrange(20)} LIMIT 1);")
            else:
                out.append(f"UPDATE t SET v = {vec()}, cat = {rnd.randrange(10)} WHERE id = {x};")
        elif role == "del":
            # Only while the table holds more than ROWS rows: its size stays about the same
            # whatever the speed of each session.
            r, full = rnd.randrange(31), f"(SELECT count(*) FROM t) > {rows}"
            if i % 3 == 0:
                out.append(f"DELETE FROM t WHERE id IN (SELECT id FROM t WHERE id % 31 = {r} ORDER BY id LIMIT 5) AND {full};")
            elif i % 3 == 1:
                out.append(f"DELETE FROM t WHERE id IN (SELECT id FROM t WHERE id % 31 = {r} ORDER BY id DESC LIMIT 5) AND {full};")
            else:
                out.append(f"DELETE FROM t WHERE id = ANY ('{{{rnd.randint(1, rows)},{rnd.randint(1, rows)}}}') AND {full};")
        elif role == "srch1":
            search(10, f"SELECT id FROM t ORDER BY v <-> {vec()}")
        elif role == "srch2":
            if i % 2:
                search(20, f"SELECT id FROM t ORDER BY v <-> {vec()}")
            else:
                search(10, f"SELECT id FROM t ORDER BY v <-> "
                           f"coalesce((SELECT v FROM t WHERE id = {rnd.randint(1, rows)}), {vec()})")
        elif role == "iter":
            c = rnd.randrange(10)
            extra = " AND id % 2 = 0" if i % 2 else ""
            search(10, f"SELECT id FROM t WHERE cat = {c}{extra} ORDER BY v <-> {vec()}")
        elif role == "vac":
            out.append(("VACUUM t;", "VACUUM (INDEX_CLEANUP ON) t;",
                        "VACUUM (PARALLEL 2, INDEX_CLEANUP ON) t;", "ANALYZE t;")[i % 4])
            out.append("SELECT pg_sleep(0.2);")
        # Every unit: one "." on stdout, then the clock.
        out.append("\\echo .")
        out.append(f"SELECT extract(epoch FROM clock_timestamp()) >= {deadline} AS stop \\gset")
        out.append("\\if :stop\n\\q\n\\endif")
    return "\n".join(out) + "\n"
try:
    for k in itertools.count():
        text = chunk(k)
        copy.write(text)
        sys.stdout.write(text)
except BrokenPipeError:  # psql has quit
    copy.close()
    os._exit(0)
PY

# session LIB ROLE DIR: ROLE's statements on one psql until the deadline; its stdout (the
# units' dots) goes to DIR/ROLE.out, its stderr to DIR/ROLE.err, the statements to DIR/ROLE.sql
# (kept if stderr is not empty: the line numbers of psql's messages are this file's). A psql
# exit status other than 0 is written to stderr too.
session() {
  local lib=$1 role=$2 dir=$3
  set +e
  python3 "$work/gen.py" "$role" "$deadline" "$rows" "$dir/$role.sql" |
    sql "$lib" -v ON_ERROR_STOP=0 -f - > "$dir/$role.out" 2> "$dir/$role.err"
  local rc=("${PIPESTATUS[@]}")
  [ "${rc[1]}" = 0 ] || echo "psql: exit status ${rc[1]}" >> "$dir/$role.err"
  [ "${rc[0]}" = 0 ] || echo "gen.py: exit status ${rc[0]}" >> "$dir/$role.err"
  [ -s "$dir/$role.err" ] || rm -f "$dir/$role.sql"
}

# settle LIB: wait until the checking session is the only backend left (no client backend, no
# autovacuum worker), then until no buffer is pinned. Fails if a pin stays.
settle() {
  local lib=$1 n pins others
  for ((n = 0; ; n++)); do
    others=$(sql "$lib" -c "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()
                              AND backend_type IN ('client backend', 'autovacuum worker', 'parallel worker')")
    [ "$others" = 0 ] && break
    [ "$n" -lt 600 ] || fail "$lib: $others backends still there: $(sql "$lib" -c "SELECT pid, backend_type, state, query FROM pg_stat_activity WHERE pid <> pg_backend_pid()")"
    sleep 0.2
  done
  for ((n = 0; ; n++)); do
    pins=$(sql "$lib" -c "SELECT count(*) FROM pg_buffercache WHERE pinning_backends > 0")
    [ "$pins" = 0 ] && break
    [ "$n" -lt 50 ] || fail "$lib: $pins buffers stay pinned with no other session: $(sql "$lib" -c "
      SELECT b.relfilenode, c.relname, b.relblocknumber, b.pinning_backends FROM pg_buffercache b
      LEFT JOIN pg_class c ON c.relfilenode = b.relfilenode WHERE b.pinning_backends > 0")"
    sleep 0.2
  done
}

# soak LIB: the whole run on a fresh cluster. Writes "STATEMENTS ERRORS WARNINGS OTHER SHORT R0 R1"
# to $work/LIB/result.
soak() {
  local lib=$1 dir=$work/$1 pids=() role p plan errors warnings other statements short r0 r1
  rm -rf "$work/cluster" "$dir"
  mkdir -p "$dir"
  start "$lib"
  sql "$lib" -c "CREATE EXTENSION vector" -c "CREATE EXTENSION pg_buffercache" -c "SELECT setseed(0.41)" -c "
    CREATE TABLE t (id bigint PRIMARY KEY, cat int, v vector(16));
    INSERT INTO t SELECT i, (random() * 9)::int,
      array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 16) WHERE i > 0)
    FROM generate_series(1, $rows) i;
    CREATE TABLE queries AS SELECT i AS id,
      array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 16) WHERE i > 0)::vector(16) AS v
    FROM generate_series(1, 300) i;
    SET max_parallel_maintenance_workers = 0;
    CREATE INDEX t_idx ON t USING hnsw (v vector_l2_ops) WITH (m = 8, ef_construction = 32);
    ANALYZE t;" >/dev/null
  for q in "SELECT id FROM t ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10" \
           "SELECT id FROM t WHERE cat = 3 AND id % 2 = 0 ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10"; do
    plan=$(sql "$lib" -c "SET enable_seqscan = off; SET hnsw.iterative_scan = relaxed_order; EXPLAIN $q")
    grep -q 't_idx' <<< "$plan" || fail "$lib: the sessions' search does not use t_idx: $plan"
  done
  truth "$lib" t "<->" truth0
  results "$lib" t "<->" 40 res0
  r0=$(recall_of "$lib" res0 truth0)

  deadline=$(( $(date +%s) + seconds ))
  for role in "${roles[@]}"; do
    session "$lib" "$role" "$dir" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "$lib: a session loop failed"; done

  errors=$(cat "$dir"/*.err | grep -c 'ERROR:' || true)
  warnings=$(cat "$dir"/*.err | grep -c 'WARNING:' || true)
  # Anything else than an error report (its DETAIL/HINT/CONTEXT/LINE lines included): a lost
  # connection, a psql failure.
  other=$(cat "$dir"/*.err | grep -Ev 'ERROR:|WARNING:|^(DETAIL|HINT|CONTEXT|LINE [0-9]+|QUERY):|^ ' | grep -c . || true)
  statements=$(cat "$dir"/*.out | grep -cx '\.' || true)
  short=$(cat "$dir"/*.out | grep -cx 'short' || true)
  for role in "${roles[@]}"; do
    printf '%s %s ' "$role" "$(grep -cx '\.' "$dir/$role.out" || true)"
  done > "$dir/per-role"
  echo "   $lib statements per session: $(cat "$dir/per-role")"
  if [ "$errors$warnings$other" != 000 ]; then
    echo "   $lib: stderr of the sessions ($dir/ROLE.err; their statements: $dir/ROLE.sql):"
    grep -H . "$dir"/*.err | sed 's/<stdin>:[0-9]*:/<stdin>:N:/' | sort | uniq -c | sort -rn | head -20 | sed 's/^/     /'
  fi

  sql "$lib" -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null
  settle "$lib"
  sql "$lib" -c "VACUUM t"
  if [ "$lib" = ours ]; then
    out=$(sql ours -c "SELECT hnsw_index_parent_check('t_idx', true)" 2>&1) ||
      fail "ours: hnsw_index_parent_check after the soak: $out"
  fi
  truth "$lib" t "<->" truth1
  results "$lib" t "<->" 40 res1
  r1=$(recall_of "$lib" res1 truth1)
  echo "   $lib: $(sql "$lib" -c "SELECT count(*) || ' rows (' || count(v) || ' with a value), index '
    || pg_relation_size('t_idx') / 8192 || ' pages' FROM t"), recall@10 $r0 -> $r1"
  settle "$lib"
  stop "$lib"
  ! grep -q 'terminated by signal' "$data.log" || fail "$lib: a backend was terminated by a signal (see $data.log)"
  if [ "$lib" = ours ] && grep -Eq 'resource was not closed|leak' "$data.log"; then
    fail "ours: the server log reports a leak: $(grep -E 'resource was not closed|leak' "$data.log" | head -5)"
  fi
  cp "$data.log" "$dir/server.log"
  echo "$statements $errors $warnings $other $short $r0 $r1" > "$dir/result"
}

echo "-- our library ($seconds s)"
soak ours
read -r o_n o_err o_warn o_other o_short o0 o1 < "$work/ours/result"
echo "   ours: $o_n statements, $o_err errors, $o_warn warnings, $o_other other stderr lines, $o_short short results"
echo "-- pgvector 0.8.6 ($seconds s)"
soak pgvector
read -r p_n p_err p_warn p_other p_short p0 p1 < "$work/pgvector/result"
echo "   pgvector: $p_n statements, $p_err errors, $p_warn warnings, $p_other other stderr lines, $p_short short results"

[ "$o_err" = 0 ] || fail "ours: $o_err unexpected ERRORs (see $work/ours/*.err)"
[ "$o_warn" = 0 ] || fail "ours: $o_warn WARNINGs (see $work/ours/*.err)"
[ "$o_other" = 0 ] || fail "ours: $o_other unexpected stderr lines (see $work/ours/*.err)"
o_drop=$(python3 -c "print(round($o0 - $o1, 4))")
p_drop=$(python3 -c "print(round($p0 - $p1, 4))")
echo "   recall@10 drop: ours $o_drop ($o0 -> $o1), pgvector $p_drop ($p0 -> $p1)"
at_least "$p_drop + $tolerance" "$o_drop" ||
  fail "ours' recall dropped by $o_drop, pgvector's by $p_drop (tolerance $tolerance)"
echo "soak: ok (ours: $o_n statements, $o_err errors, recall $o0 -> $o1; pgvector: $p_n statements, $p_err errors, recall $p0 -> $p1)"
