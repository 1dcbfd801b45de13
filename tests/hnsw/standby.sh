#!/usr/bin/env bash
# hnsw on a streaming standby that serves searches while it replays builds, inserts and vacuum.
#  1. A primary on our library: items (vector(32), cat), hitems (halfvec(32)) and queries; a
#     standby with hot_standby_feedback on (the primary's walsender shows its xmin), from a
#     base backup taken before any hnsw index.
#  2. Two sessions search the standby all along (one psql per chunk of statements): plain index
#     searches of items and hitems, and iterative ones (relaxed_order) filtered on cat. Before
#     the first build they scan the tables. Everything they print on stderr goes to a log.
#  3. Rounds on the primary: builds (items' with maintenance_work_mem = 1MB must say its graph
#     went to disk, hitems' stays in memory), batches of inserts, deletes and VACUUM, updates,
#     REINDEX INDEX CONCURRENTLY and CREATE INDEX CONCURRENTLY. After each, with the primary
#     quiet: its answers (10 nearest ids of every query at ef_search 40 and 200 on items_l2 and
#     hitems_cos, at 40 on items_ip, 30 of an iterative scan filtered on cat), then its LSN
#     (autovacuum is off); once the standby has replayed that LSN, its answers must be the
#     same, its plans must use the hnsw indexes, and both search sessions must have gone on
#     during the round.
#  4. At the end: no error in the search sessions, a minimum number of searches in each, every
#     iterative one with its 20 rows (each category keeps hundreds);
#     hnsw_index_check (heapallindexed) of every index on the standby (parent_check needs a
#     ShareLock, refused in recovery), hnsw_index_parent_check on the primary; after a
#     CHECKPOINT, every index page on the standby equals the primary's (checksum masked); the
#     primary's pages pass check_pages.py (items' rows' values compared with their elements').
#  HNSW_OPTIONS (e.g. "quantization = 'rabitq8'") is added to every index's WITH, so that the
#  same checks run on our quantized format (standby_quantized.sh); then the metapages must say
#  so, and every index must have vector pages. STANDBY_ROWS (6000) and STANDBY_MIN_SEARCHES
#  (1000) size the run.
# Usage: tests/hnsw/standby.sh [WORKDIR]   (OURS=..., PORT_OURS, PORT_STANDBY, HNSW_OPTIONS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-standby.XXXXXX)}
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
began=$(date +%s)
rm -rf "$work/cluster" "$work/standby" "$work/loops"
mkdir -p "$work/loops" && chmod 777 "$work/loops"
standby_data=$work/standby/data
standby_port=${PORT_STANDBY:-55513}
loops=(plain iter)
min_searches=${STANDBY_MIN_SEARCHES:-1000}
nrows=${STANDBY_ROWS:-6000}
options=${HNSW_OPTIONS:-}
loop_pids=()
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

standby_sql() {
  PGOPTIONS=${PGOPTIONS:--c client_min_messages=warning} "$OURS/bin/psql" -X -q -At -v ON_ERROR_STOP=1 \
    -h "$work/standby" -p "$standby_port" -U postgres -d postgres "$@"
}
primary_sql() { sql ours "$@"; }
stop_loops() {
  touch "$work/loops/stop"
  local p
  for p in "${loop_pids[@]}"; do wait "$p" || true; done
  loop_pids=()
}
on_exit() {
  touch "$work/loops/stop"
  [ ${#loop_pids[@]} = 0 ] || kill "${loop_pids[@]}" 2>/dev/null || true
  "$root/scripts/pg-server.sh" stop "$OURS/bin" "$standby_data" 2>/dev/null
  cleanup_servers
}
trap on_exit EXIT

# wait_for_lsn LSN: until the standby has replayed up to LSN (60 s).
wait_for_lsn() {
  local n
  for ((n = 0; n < 300; n++)); do
    [ "$(standby_sql -c "SELECT pg_last_wal_replay_lsn() >= '$1'")" = t ] && return 0
    sleep 0.2
  done
  fail "the standby did not replay up to $1 (it is at $(standby_sql -c 'SELECT pg_last_wal_replay_lsn()'))"
}

# search_loop NAME: searches on the standby in chunks of 20, one psql per chunk, until the file
# loops/stop exists. Each search prints its row count to NAME.out; stderr and psql's exit
# statuses go to NAME.err, and the chunk of an error is kept (psql's line numbers are its own).
search_loop() {
  local name=$1 dir=$work/loops i q k rc before chunks=0
  while [ ! -e "$dir/stop" ]; do
    chunks=$((chunks + 1))
    {
      echo "SET enable_seqscan = off;"
      echo "SET hnsw.ef_search = $(( chunks % 2 ? 40 : 100 ));"
      [ "$name" = iter ] && echo "SET hnsw.iterative_scan = relaxed_order;"
      for ((i = 0; i < 20; i++)); do
        q=$((RANDOM % 30 + 1)) k=$((RANDOM % 10))
        if [ "$name" = iter ]; then
          echo "SELECT count(*) FROM (SELECT id FROM items WHERE cat = $k
                  ORDER BY v <-> (SELECT v FROM queries WHERE id = $q) LIMIT 20) s;"
        elif ((i % 2)); then
          echo "SELECT count(*) FROM (SELECT id FROM hitems
                  ORDER BY h <=> (SELECT v FROM queries WHERE id = $q)::halfvec LIMIT 10) s;"
        else
          echo "SELECT count(*) FROM (SELECT id FROM items
                  ORDER BY v <-> (SELECT v FROM queries WHERE id = $q) LIMIT 10) s;"
        fi
      done
    } > "$dir/$name.sql"
    before=$(stat -c %s "$dir/$name.err")
    rc=0
    PGOPTIONS="-c client_min_messages=warning" timeout 60 "$OURS/bin/psql" -X -q -At \
      -v ON_ERROR_STOP=0 -h "$work/standby" -p "$standby_port" -U postgres -d postgres \
      -f "$dir/$name.sql" >> "$dir/$name.out" 2>> "$dir/$name.err" || rc=$?
    [ "$rc" = 0 ] || echo "psql exit status $rc" >> "$dir/$name.err"
    [ "$(stat -c %s "$dir/$name.err")" = "$before" ] || cp "$dir/$name.sql" "$dir/$name.chunk$chunks.sql"
  done
}
searches() { local n; n=$(wc -l < "$work/loops/$1.out"); echo "$n"; }

# rows_sql FROM TO: random rows with those ids into items and hitems.
rows_sql() {
  echo "INSERT INTO items SELECT i, array(SELECT random() FROM generate_series(1, 32) WHERE i > 0), i % 10
    FROM generate_series($1, $2) i;
  INSERT INTO hitems SELECT i, array(SELECT random() - 0.5 FROM generate_series(1, 32) WHERE i > 0)::halfvec
    FROM generate_series($1, $2) i;"
}

start ours
# No autovacuum: nothing may change an index between the primary's answers and its LSN.
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "CREATE EXTENSION pageinspect" -c "SELECT setseed(0.31)" -c "
  CREATE TABLE items (id int PRIMARY KEY, v vector(32), cat int) WITH (autovacuum_enabled = off);
  CREATE TABLE hitems (id int PRIMARY KEY, h halfvec(32)) WITH (autovacuum_enabled = off);
  CREATE TABLE queries (id int PRIMARY KEY, v vector(32)) WITH (autovacuum_enabled = off);
  INSERT INTO queries SELECT q, array(SELECT random() FROM generate_series(1, 32) WHERE q > 0)
    FROM generate_series(1, 30) q;
  $(rows_sql 1 "$nrows")
  ANALYZE;" >/dev/null

echo "-- base backup before any hnsw index; standby with hot_standby_feedback"
as_postgres "$OURS/bin/pg_basebackup" -h "$work/cluster" -p "$PORT_OURS" -U postgres \
  -D "$standby_data" -R -X stream -c fast
echo "hot_standby_feedback = on" >> "$standby_data/postgresql.auto.conf"
mkdir -p "$work/standby"; [ "$(id -u)" = 0 ] && chown postgres "$work/standby"
"$root/scripts/pg-server.sh" start "$OURS/bin" "$standby_data" "$standby_port"
[ "$(standby_sql -c 'SELECT pg_is_in_recovery()')" = t ] || fail "the standby is not in recovery"
[ "$(standby_sql -c 'SHOW hot_standby_feedback')" = on ] || fail "hot_standby_feedback is not on"

for name in "${loops[@]}"; do
  : > "$work/loops/$name.out"; : > "$work/loops/$name.err"
  search_loop "$name" &
  loop_pids+=($!)
done
# The standby's feedback reaches the primary: its walsender holds the standby's xmin.
for ((n = 0; n < 100; n++)); do
  [ "$(sql ours -c "SELECT count(*) FROM pg_stat_replication WHERE backend_xmin IS NOT NULL")" = 1 ] && break
  sleep 0.2
done
[ "$n" -lt 100 ] || fail "no hot_standby_feedback xmin in the primary's pg_stat_replication"

# The answer sets compared, one per line: LABEL|SETTINGS|INDEX|QUERY (q: the queries row).
specs=(
  "l2 ef 40|SET hnsw.ef_search = 40|items_l2|SELECT q.id, array(SELECT t.id FROM items t ORDER BY t.v <-> q.v LIMIT 10) FROM queries q ORDER BY q.id"
  "l2 ef 200|SET hnsw.ef_search = 200|items_l2|SELECT q.id, array(SELECT t.id FROM items t ORDER BY t.v <-> q.v LIMIT 10) FROM queries q ORDER BY q.id"
  "halfvec cos ef 40|SET hnsw.ef_search = 40|hitems_cos|SELECT q.id, array(SELECT t.id FROM hitems t ORDER BY t.h <=> q.v::halfvec LIMIT 10) FROM queries q ORDER BY q.id"
  "halfvec cos ef 200|SET hnsw.ef_search = 200|hitems_cos|SELECT q.id, array(SELECT t.id FROM hitems t ORDER BY t.h <=> q.v::halfvec LIMIT 10) FROM queries q ORDER BY q.id"
  "iterative filtered|SET hnsw.ef_search = 40; SET hnsw.iterative_scan = relaxed_order|items_l2|SELECT q.id, array(SELECT t.id FROM items t WHERE t.cat = q.id % 10 ORDER BY t.v <-> q.v LIMIT 30) FROM queries q ORDER BY q.id"
)
ip_spec="ip ef 40|SET hnsw.ef_search = 40|items_ip|SELECT q.id, array(SELECT t.id FROM items t ORDER BY t.v <#> q.v LIMIT 10) FROM queries q ORDER BY q.id"

# answers RUN: every answer set of specs, each line prefixed by its label.
answers() {
  local spec label settings index query
  for spec in "${specs[@]}"; do
    IFS='|' read -r label settings index query <<< "$spec"
    "$1" -c "SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0; $settings" -c "$query" |
      sed "s/^/$label: /" || return 1
  done
}

# plans_use_indexes: the standby plans every answer set with its hnsw index.
plans_use_indexes() {
  local spec label settings index query plan
  for spec in "${specs[@]}"; do
    IFS='|' read -r label settings index query <<< "$spec"
    plan=$(standby_sql -c "SET enable_seqscan = off; $settings" -c "EXPLAIN (COSTS OFF) $query")
    grep -q "Index Scan using $index on" <<< "$plan" || fail "$label: the standby's plan does not use $index: $plan"
  done
}

# compare ROUND NAME MARKS: the primary's answers, then its LSN; the standby's once replayed.
# MARKS: the search counts of the loops when the round began.
compare() {
  local round=$1 name=$2 marks p s lsn i counts=()
  read -ra marks <<< "$3"
  p=$(answers primary_sql)
  lsn=$(sql ours -c "SELECT pg_current_wal_lsn()")
  wait_for_lsn "$lsn"
  plans_use_indexes
  s=$(answers standby_sql)
  [ "$(grep -c . <<< "$p")" = $((30 * ${#specs[@]})) ] || fail "round $round: the primary gave $(grep -c . <<< "$p") answers"
  ! grep -q '|{}$' <<< "$p" || fail "round $round: an empty answer on the primary: $(grep -m1 '|{}$' <<< "$p")"
  [ "$p" = "$s" ] || {
    diff <(echo "$p") <(echo "$s") | head -6 || true
    fail "round $round ($name): the standby answers differently at $lsn"
  }
  for i in "${!loops[@]}"; do
    counts+=("$(searches "${loops[$i]}")")
    [ "${counts[$i]}" -gt "${marks[$i]}" ] || fail "round $round: no ${loops[$i]} search ran on the standby during the round"
  done
  echo "round $round ($name): standby at $lsn answers as the primary (${#specs[@]} sets x 30 queries);" \
    "searches so far: ${loops[0]} ${counts[0]}, ${loops[1]} ${counts[1]} ($(( $(date +%s) - began )) s)"
}
marks() { local l; for l in "${loops[@]}"; do printf '%s ' "$(searches "$l")"; done; }

echo "-- rounds on the primary while the standby searches"
m=$(marks)
PGOPTIONS="-c client_min_messages=notice" sql ours -c "SET maintenance_work_mem = '1MB'" -c "
  CREATE INDEX items_l2 ON items USING hnsw (v vector_l2_ops) WITH (m = 8, ef_construction = 32${options:+, $options})" \
  > "$work/build.msg" 2>&1 || { cat "$work/build.msg"; fail "the build of items_l2 failed"; }
grep -q '^NOTICE:  hnsw graph no longer fits into maintenance_work_mem after [0-9]* tuples$' "$work/build.msg" ||
  fail "items_l2 was built without going to disk: $(cat "$work/build.msg")"
PGOPTIONS="-c client_min_messages=notice" sql ours -c "
  CREATE INDEX hitems_cos ON hitems USING hnsw (h halfvec_cosine_ops) WITH (m = 8, ef_construction = 32${options:+, $options})" \
  > "$work/build2.msg" 2>&1 || { cat "$work/build2.msg"; fail "the build of hitems_cos failed"; }
! grep -q 'no longer fits' "$work/build2.msg" || fail "hitems_cos did not stay in memory: $(cat "$work/build2.msg")"
sql ours -c "ANALYZE items" -c "ANALYZE hitems"
compare 1 "builds: items_l2 on disk ($(sed -n 's/.*after \([0-9]*\) tuples$/\1/p' "$work/build.msg") tuples in memory), hitems_cos in memory" "$m"

# The loops' own statements use the indexes on the standby.
for q in "SELECT id FROM items ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 10|items_l2" \
         "SELECT id FROM hitems ORDER BY h <=> (SELECT v FROM queries WHERE id = 1)::halfvec LIMIT 10|hitems_cos" \
         "SELECT id FROM items WHERE cat = 3 ORDER BY v <-> (SELECT v FROM queries WHERE id = 1) LIMIT 20|items_l2"; do
  plan=$(standby_sql -c "SET enable_seqscan = off; SET hnsw.iterative_scan = relaxed_order" -c "EXPLAIN (COSTS OFF) ${q%|*}")
  grep -q "Index Scan using ${q##*|} on" <<< "$plan" || fail "the standby's searches do not use ${q##*|}: $plan"
done

m=$(marks)
sql ours -c "SELECT setseed(0.5)" >/dev/null
for b in 0 1 2 3 4; do sql ours -c "$(rows_sql $((nrows + 1 + b * 300)) $((nrows + 300 + b * 300)))"; done
compare 2 "inserts: 5 batches of 300 rows" "$m"

m=$(marks)
sql ours -c "DELETE FROM items WHERE id % 3 = 0" -c "DELETE FROM hitems WHERE id % 4 = 1" \
  -c "VACUUM items" -c "VACUUM hitems"
compare 3 "deletes and VACUUM" "$m"

m=$(marks)
sql ours -c "SELECT setseed(0.6)" -c "
  UPDATE items SET v = array(SELECT random() FROM generate_series(1, 32) WHERE id > 0), cat = (cat + 3) % 10
    WHERE id % 7 = 2;
  UPDATE hitems SET h = array(SELECT random() - 0.5 FROM generate_series(1, 32) WHERE id > 0)::halfvec
    WHERE id % 9 = 3;" >/dev/null
compare 4 "updates" "$m"

m=$(marks)
sql ours -c "REINDEX INDEX CONCURRENTLY items_l2" \
  -c "SET maintenance_work_mem = '1MB'" -c "SET client_min_messages = warning" \
  -c "CREATE INDEX CONCURRENTLY items_ip ON items USING hnsw (v vector_ip_ops) WITH (m = 8, ef_construction = 32${options:+, $options})"
specs+=("$ip_spec")
compare 5 "REINDEX INDEX CONCURRENTLY items_l2, CREATE INDEX CONCURRENTLY items_ip" "$m"

stop_loops
# PostgreSQL's planner lists a table's indexes, then locks each: an index that replay drops in
# between (REINDEX CONCURRENTLY's old one) raises "could not open relation with OID" in core,
# with any index access method. Counted apart and bounded; every other error fails.
race='ERROR:  could not open relation with OID [0-9]+$'
errors=0 other=0 total=0 races=0
for name in "${loops[@]}"; do
  n=$(searches "$name")
  r=$(grep -Ec "$race" "$work/loops/$name.err" || true)
  races=$((races + r))
  e=$(grep -Ev "$race" "$work/loops/$name.err" | grep -Ec 'ERROR:|FATAL:|PANIC:|psql: error|psql exit status' || true)
  o=$(grep -Ev 'ERROR:|FATAL:|PANIC:|psql: error|psql exit status|^(DETAIL|HINT|CONTEXT|LINE [0-9]+|QUERY|STATEMENT):|^ ' \
    "$work/loops/$name.err" | grep -c . || true)
  short=$(grep -cvx "$([ "$name" = iter ] && echo 20 || echo 10)" "$work/loops/$name.out" || true)
  echo "$name searches on the standby: $n ($short returned fewer rows than their LIMIT), $e errors, $r index-dropped races, $o other stderr lines"
  errors=$((errors + e)) other=$((other + o)) total=$((total + n))
  [ "$n" -ge "$min_searches" ] || fail "$name: only $n searches ran on the standby (at least $min_searches expected)"
  # Every category keeps hundreds of rows: an iterative scan always finds its 20.
  [ "$name" != iter ] || [ "$short" = 0 ] || fail "$short iterative searches on the standby returned fewer than 20 rows"
done
[ "$races" -le 2 ] || fail "$races searches on the standby met an index dropped under them (at most 2 expected)"
if [ "$errors$other" != 00 ]; then
  grep -H . "$work"/loops/*.err | sed 's/:[0-9]*: /:N: /' | sort | uniq -c | sort -rn | head -20 || true
  fail "$errors errors and $other other stderr lines in the standby's searches (see $work/loops/*.err, *.chunk*.sql)"
fi

echo "-- verifiers, then the index pages"
case $options in
  *quantization*)
    # Quantized indexes: our magic number, vector pages (special space's spare half-word 1).
    for index in items_l2 hitems_cos items_ip; do
      q=$(sql ours -c "SELECT encode(substring(get_raw_page('$index', 0) FROM 25 FOR 4), 'hex'),
        (SELECT count(*) FROM generate_series(1, pg_relation_size('$index') / 8192 - 1) b
          WHERE get_byte(get_raw_page('$index', b::int), 8188) = 1)")
      [ "${q%|*}" = dec053a9 ] || fail "$index is not quantized (metapage magic ${q%|*})"
      [ "${q#*|}" -gt 0 ] || fail "$index has no vector page"
      echo "$index: quantized, ${q#*|} vector pages"
    done ;;
esac
for index in items_l2 hitems_cos items_ip; do
  out=$(standby_sql -c "SELECT hnsw_index_check('$index', true)" 2>&1) ||
    fail "standby: hnsw_index_check('$index', true): $out"
  out=$(sql ours -c "SELECT hnsw_index_parent_check('$index', true)" 2>&1) ||
    fail "primary: hnsw_index_parent_check('$index', true): $out"
done
echo "hnsw_index_check on the standby and hnsw_index_parent_check on the primary: items_l2, hitems_cos, items_ip clean"
# The primary's pages decoded independently (check_pages.py), every row's value compared.
for spec in "items_l2 items" "items_ip items" "hitems_cos hitems"; do
  set -- $spec
  if [ "$2" = items ]; then out=$(VALUES=1 check_pages ours "$1" "$2") || fail "page check of $1: $out"
  else out=$(ROWS="h IS NOT NULL" check_pages ours "$1" "$2") || fail "page check of $1: $out"; fi
  echo "$1 (primary): $out"
done

# Every block with its checksum bytes (8-9) masked: they are set when a page is written out.
page_digests="SELECT b, md5(overlay(get_raw_page(\$1, b) PLACING '\\x0000'::bytea FROM 9 FOR 2))
  FROM generate_series(0, pg_relation_size(\$1::regclass) / 8192 - 1) b"
sql ours -c "CHECKPOINT" >/dev/null
wait_for_lsn "$(sql ours -c "SELECT pg_current_wal_lsn()")"
for index in items_l2 hitems_cos items_ip; do
  p=$(sql ours -c "PREPARE d(text) AS $page_digests" -c "EXECUTE d('$index')")
  s=$(standby_sql -c "PREPARE d(text) AS $page_digests" -c "EXECUTE d('$index')")
  pages=$(grep -c . <<< "$p")
  [ "$pages" -gt 10 ] || fail "$index: only $pages pages"
  [ "$p" = "$s" ] || { diff <(echo "$p") <(echo "$s") | head -5 || true; fail "$index: the standby's pages differ from the primary's"; }
  echo "$index: $pages pages identical on the standby"
done
echo "standby: ok ($total searches on the standby, $errors errors, $(( $(date +%s) - began )) s)"
