#!/usr/bin/env bash
# Soak: 8 concurrent sessions insert, update, delete, search (plain and iterative) and VACUUM a
# table indexed by AM (hnsw or ivfflat) for SECONDS; the same seeded workload runs on our
# library and on pristine pgvector 0.8.6, each on a fresh cluster (autovacuum on, as in
# production). The one implementation of both access methods' soaks: tests/hnsw/soak.sh and
# tests/ivfflat/soak.sh call it; only the index, the search settings and the verifier differ.
#  1. Table t (id bigint primary key, cat int, v vector(16)): 8000 seeded rows, index t_idx
#       hnsw     vector_l2_ops, m 8, ef_construction 32; recall measured at ef_search 40;
#       ivfflat  vector_l2_ops, lists 40; recall measured at probes 15 (about 0.97; 1 from about
#                probes 30). At probes 10 (about 0.91) the difference of the two libraries' drops
#                spread by 0.014 from run to run, and 1 run in 7 failed the 0.02 below; at 15 by
#                0.006.
#     300 fixed queries; recall@10 against brute force (sequential scan, tests/lib.sh `truth`).
#     Every query shape of every searching session, with that session's settings, must use
#     t_idx (EXPLAIN).
#  2. The sessions, each one psql fed by a seeded generator (written by this script) in chunks
#     of 250 statements that reconnect (\connect) first; chunk K of a role is the same on both
#     libraries. Every statement is followed by a clock check: psql quits at the deadline.
#       ins1, ins2  single-row INSERTs with ids of their own; on ivfflat each only while the
#                   table holds fewer than 8200 rows (its inserts outpace the deleter: a 20 s run
#                   without that bound ended with 41,000 rows on ours, 45,000 on pgvector);
#       upd         UPDATEs of v and cat: random original rows (one in ten sets v to NULL), an
#                   inserter's newest row, a recent row of a residue class;
#       del         DELETEs of the 5 oldest / 5 newest rows of a residue class, and of random
#                   original rows, each only while the table holds more than 8000 rows (its
#                   size, hence its recall, does not depend on the sessions' speeds);
#       srch1/2     plain index searches, LIMIT 10 (srch1) and LIMIT 20 (srch2), also by a row's
#                   own value (srch2); hnsw at ef_search 40 (srch1) and 100 (srch2), ivfflat at
#                   probes 10 (srch1) and 40, every list (srch2);
#       iter        iterative searches (iterative_scan = relaxed_order) with a filter on cat
#                   (10% and 5% of the rows); hnsw at ef_search 40, ivfflat from probes 1 up to
#                   max_probes 20 (a list holds about 200 rows: the filter often needs more);
#       vac         VACUUM (plain, INDEX_CLEANUP ON, PARALLEL 2), ANALYZE, short sleeps.
#     Every psql runs with ON_ERROR_STOP off; its stderr goes to a file per session.
#  3. Afterwards: every ERROR line of every session is counted; none is expected (the workload
#     has no conflicting keys and no lock cycles), so ours must have 0, and no WARNING either,
#     no psql exit other than 0; pgvector's counts are reported. No backend may have been
#     terminated by a signal, and ours' log may not report a leaked resource.
#  4. Autovacuum is turned off; once pg_stat_activity shows no other client backend and no
#     autovacuum worker, pg_buffercache must show no pinned buffer (re-read a few times: the
#     checkpointer and background writer pin buffers for a moment). Checked again at the end.
#  5. VACUUM t, then (ours) the verifier, hnsw_index_parent_check or ivfflat_index_parent_check
#     ('t_idx', true): pages, links or lists, and every visible heap row in the index. On ivfflat
#     every row must also be in the list of its nearest center (ours: 0 rows that a search by
#     their own value at probes 1 misses; pgvector's count is reported). Recall@10 is measured
#     again against the new brute force. Ours' recall drop must not exceed pgvector's by more
#     than 0.02. (ivfflat's k-means cannot be seeded, so each build's recall differs, but before
#     and after share the build. By the end nearly every row was inserted after the build, and
#     k-means fitted none of them: both libraries lose about 0.01 at probes 15.)
# Searches that return fewer rows than their LIMIT are reported ("short"), not asserted: a plain
# (non-iterative) hnsw scan legitimately can when dead rows fill ef_search, an ivfflat one when
# its lists hold fewer live rows than the LIMIT.
# Usage: tests/soak.sh AM [WORKDIR] [SECONDS]   (AM: hnsw or ivfflat; default 20 s; a long run:
#        tests/soak.sh hnsw /tmp/soak 300)   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
#        tests/hnsw/soak.sh and tests/ivfflat/soak.sh [WORKDIR] [SECONDS] are the same with AM set.
set -euo pipefail
am=${1:-}
case "$am" in
hnsw | ivfflat) ;;
*) echo "usage: $0 hnsw|ivfflat [WORKDIR] [SECONDS]" >&2; exit 2 ;;
esac
work=${2:-$(mktemp -d "/tmp/$am-soak.XXXXXX")}
seconds=${3:-20}
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
rows=8000
tolerance=0.02
roles=(ins1 ins2 upd del srch1 srch2 iter vac)

# Per access method: t_idx's definition (after USING), the settings of each searching role (run
# after each reconnect, with enable_seqscan off), those of the recall measurement, the bound of
# the inserters (0: none), the verifier.
declare -A role_settings
case "$am" in
hnsw)
  index_def="hnsw (v vector_l2_ops) WITH (m = 8, ef_construction = 32)"
  role_settings=([srch1]="SET hnsw.ef_search = 40;" [srch2]="SET hnsw.ef_search = 100;"
    [iter]="SET hnsw.ef_search = 40; SET hnsw.iterative_scan = relaxed_order;")
  recall_settings="SET hnsw.ef_search = 40;"
  insert_cap=0
  ;;
ivfflat)
  lists=40
  index_def="ivfflat (v vector_l2_ops) WITH (lists = $lists)"
  role_settings=([srch1]="SET ivfflat.probes = 10;" [srch2]="SET ivfflat.probes = $lists;"
    [iter]="SET ivfflat.probes = 1; SET ivfflat.iterative_scan = relaxed_order; SET ivfflat.max_probes = 20;")
  recall_settings="SET ivfflat.probes = 15;"
  insert_cap=$((rows + 200))
  ;;
esac
verifier=${am}_index_parent_check

# gen.py ROLE DEADLINE ROWS COPY SETTINGS CAP: ROLE's statements, endlessly, in chunks of 250
# units (chunk K seeded by ROLE and K, so the same on both libraries); each chunk reconnects
# (\connect), then, for a searching role (SETTINGS not empty), turns enable_seqscan off and runs
# SETTINGS; it is also written to the file COPY. With CAP not 0 an INSERT adds its row only
# while the table holds fewer than CAP rows. psql stops reading at the deadline.
cat > "$work/gen.py" <<'PY'
import itertools, os, random, sys
role, deadline, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
copy, settings, cap = open(sys.argv[4], "w"), sys.argv[5], int(sys.argv[6])
def chunk(k):
    rnd = random.Random(f"soak-{role}-{k}")
    def vec():
        return "'[" + ",".join(f"{rnd.uniform(-1, 1):.4f}" for _ in range(16)) + "]'"
    out = ["\\o /dev/null"] + (["\\connect"] if k else [])
    if settings:
        out += ["SET enable_seqscan = off;", settings]
    def search(limit, sub):
        # Counts the rows (no output); a result shorter than LIMIT prints "short".
        out.append(f"SELECT count(*) < {limit} AS short FROM ({sub} LIMIT {limit}) s \\gset")
        out.append("\\if :short\n\\echo short\n\\endif")
    for i in range(250):
        if role in ("ins1", "ins2"):
            s = int(role[-1])
            row = f"{s * 100_000_000 + k * 1000 + i}, {rnd.randrange(10)}, {vec()}"
            if cap:  # only while the table holds fewer than CAP rows
                out.append(f"INSERT INTO t (id, cat, v) SELECT {row} WHERE (SELECT count(*) FROM t) < {cap};")
            else:
                out.append(f"INSERT INTO t (id, cat, v) VALUES ({row});")
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
  python3 "$work/gen.py" "$role" "$deadline" "$rows" "$dir/$role.sql" "${role_settings[$role]:-}" "$insert_cap" |
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
  local lib=$1 dir=$work/$1 pids=() role p q check plan lookup errors warnings other statements short r0 r1 out
  local nearest="ORDER BY v <-> (SELECT v FROM queries WHERE id = 1)"
  rm -rf "$work/cluster" "$dir"
  mkdir -p "$dir"
  start "$lib"
  [ "$lib" = pgvector ] || sql "$lib" -c "CREATE EXTENSION vector_rs CASCADE"
  sql "$lib" -c "CREATE EXTENSION IF NOT EXISTS vector" -c "CREATE EXTENSION pg_buffercache" -c "SELECT setseed(0.41)" -c "
    CREATE TABLE t (id bigint PRIMARY KEY, cat int, v vector(16));
    INSERT INTO t SELECT i, (random() * 9)::int,
      array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 16) WHERE i > 0)
    FROM generate_series(1, $rows) i;
    CREATE TABLE queries AS SELECT i AS id,
      array(SELECT (random() * 2 - 1)::real FROM generate_series(1, 16) WHERE i > 0)::vector(16) AS v
    FROM generate_series(1, 300) i;
    SET max_parallel_maintenance_workers = 0;
    CREATE INDEX t_idx ON t USING $index_def;
    ANALYZE t;" >/dev/null
  # ROLE:QUERY, each query shape of each searching role, planned with that role's settings.
  for check in "srch1:SELECT id FROM t $nearest LIMIT 10" "srch2:SELECT id FROM t $nearest LIMIT 20" \
    "srch2:SELECT id FROM t ORDER BY v <-> coalesce((SELECT v FROM t WHERE id = 5), (SELECT v FROM queries WHERE id = 1)) LIMIT 10" \
    "iter:SELECT id FROM t $nearest LIMIT 10" "iter:SELECT id FROM t WHERE cat = 3 $nearest LIMIT 10" \
    "iter:SELECT id FROM t WHERE cat = 3 AND id % 2 = 0 $nearest LIMIT 10"; do
    role=${check%%:*} q=${check#*:}
    plan=$(sql "$lib" -c "SET enable_seqscan = off; ${role_settings[$role]} EXPLAIN $q")
    grep -q 't_idx' <<< "$plan" || fail "$lib: $role's search does not use t_idx (${role_settings[$role]} $q): $plan"
  done
  truth "$lib" t "<->" truth0
  results_with "$lib" t "<->" "$recall_settings" res0
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
    out=$(sql ours -c "SELECT $verifier('t_idx', true)" 2>&1) ||
      fail "ours: $verifier after the soak: $out"
  fi
  if [ "$am" = ivfflat ]; then
    # The centers never move after the build, so every row is in the list of its nearest
    # center, where a search by its own value at probes 1 finds it among the first 5.
    q="SELECT count(*) FROM t WHERE v IS NOT NULL AND NOT EXISTS (SELECT 1 FROM (
         SELECT t2.id FROM t t2 ORDER BY t2.v <-> t.v LIMIT 5) s WHERE s.id = t.id)"
    lookup="SET enable_seqscan = off; SET ivfflat.probes = 1; SET ivfflat.iterative_scan = off;"
    plan=$(sql "$lib" -c "$lookup EXPLAIN $q")
    grep -q 't_idx' <<< "$plan" || fail "$lib: the lookup of each row does not use t_idx: $plan"
    out=$(sql "$lib" -c "$lookup $q")
    echo "   $lib: $out rows not in the list of their nearest center"
    [ "$lib" != ours ] || [ "$out" = 0 ] ||
      fail "ours: $out rows are not found at probes 1 by their own value (not in their nearest center's list)"
  fi
  truth "$lib" t "<->" truth1
  results_with "$lib" t "<->" "$recall_settings" res1
  r1=$(recall_of "$lib" res1 truth1)
  echo "   $lib: $(sql "$lib" -c "SELECT count(*) || ' rows (' || count(v) || ' with a value), index '
    || pg_relation_size('t_idx') / 8192 || ' pages' FROM t"), recall@10 $r0 -> $r1 ($recall_settings)"
  settle "$lib"
  stop "$lib"
  ! grep -q 'terminated by signal' "$data.log" || fail "$lib: a backend was terminated by a signal (see $data.log)"
  if [ "$lib" = ours ] && grep -Eq 'resource was not closed|leak' "$data.log"; then
    fail "ours: the server log reports a leak: $(grep -E 'resource was not closed|leak' "$data.log" | head -5)"
  fi
  cp "$data.log" "$dir/server.log"
  echo "$statements $errors $warnings $other $short $r0 $r1" > "$dir/result"
}

echo "-- $am, our library ($seconds s)"
soak ours
read -r o_n o_err o_warn o_other o_short o0 o1 < "$work/ours/result"
echo "   ours: $o_n statements, $o_err errors, $o_warn warnings, $o_other other stderr lines, $o_short short results"
echo "-- $am, pgvector 0.8.6 ($seconds s)"
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
echo "soak: ok ($am; ours: $o_n statements, $o_err errors, recall $o0 -> $o1; pgvector: $p_n statements, $p_err errors, recall $p0 -> $p1)"
