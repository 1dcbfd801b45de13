#!/usr/bin/env bash
# Sharding on PostgreSQL's own machinery: a hash-partitioned table whose partitions are
# postgres_fdw foreign tables on three shard servers, each with its own hnsw index, searched
# through a coordinator and compared with one local table holding every row.
#  1. Four clusters of our library (private sockets): shard0..shard2 and the coordinator. Each
#     shard has a plain table items (id bigint, embedding vector(48)); the coordinator has
#     postgres_fdw, one foreign server per shard (extensions 'vector', async_capable 'true'),
#     the parent items PARTITION BY HASH (id) with a foreign-table partition per shard, and ref,
#     a local table with the same rows (setseed), loaded into items through the parent.
#  2. Placement: every row sits on the shard of its hash remainder (satisfies_hash_partition).
#  3. Plans: EXPLAIN (VERBOSE) of `ORDER BY embedding <-> '...' LIMIT 10` on the parent ships
#     the ORDER BY to every shard; whether the plan is a Merge Append or an async Append, and
#     whether LIMIT reaches the shards, is printed. The per-shard form (a MATERIALIZED CTE of one
#     `ORDER BY ... LIMIT 10` per partition, UNION ALL) must ship LIMIT and run asynchronously.
#     One search through the parent must be an index scan of each shard's hnsw index
#     (pg_stat_user_indexes.idx_scan and auto_explain in the shard's log).
#  4. Exact answers: with the shards' index scans off (server option
#     options '-c enable_indexscan=off -c enable_bitmapscan=off': every shard sorts all its rows),
#     the parent's answers to 50 queries, ids and distances, equal ref's exact answers; so do
#     the per-shard form's. hnsw.ef_search cannot make the hnsw scan exact here: its maximum
#     (1000) is below the rows of a shard.
#  5. Recall@10 at default settings (hnsw.ef_search 40 on every shard, merged) must not fall
#     more than 0.01 below that of ref's own hnsw index at the same settings (both printed).
#  6. Inserts through the parent land on the shard of their remainder and a search through
#     the parent finds each (its own nearest neighbour, at distance 0).
#  7. ivfflat: the shards' and ref's hnsw indexes replaced by ivfflat ones; with
#     options '-c ivfflat.probes=LISTS' the shards' index scans are exact and answer as ref's
#     exact answers; the index is used on every shard; recall at default probes is printed.
# Every check counts; one summary line; exit status 1 if any check failed.
# Usage: tests/scale/sharding.sh [WORKDIR]   (OURS=..., SHARD_PORT_BASE (55611: shards use
#        BASE..BASE+2, the coordinator BASE+3), SHARD_ROWS (6000), SHARD_DIM (48))
set -euo pipefail
work=${1:-$(mktemp -d /tmp/scale-sharding.XXXXXX)}
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
began=$(date +%s)
for ext in postgres_fdw auto_explain; do
  [ -e "$("$OURS/bin/pg_config" --pkglibdir)/$ext.so" ] || fail "$OURS has no $ext (a contrib module)"
done
base=${SHARD_PORT_BASE:-55611}
rows=${SHARD_ROWS:-6000}
dim=${SHARD_DIM:-48}
nq=50
lists=20
nodes=(shard0 shard1 shard2 coord)
checks=0 failures=0

# node_port I / node_sql I ARGS...: node I of nodes (3 = the coordinator).
node_port() { echo $((base + $1)); }
node_sql() {
  local i=$1; shift
  PGOPTIONS=${PGOPTIONS:--c client_min_messages=warning} "$OURS/bin/psql" -X -q -At -v ON_ERROR_STOP=1 \
    -h "$work/${nodes[$i]}" -p "$(node_port "$i")" -U postgres -d postgres "$@"
}
coord() { node_sql 3 "$@"; }
on_exit() {
  local i
  for i in 0 1 2 3; do "$root/scripts/pg-server.sh" stop "$OURS/bin" "$work/${nodes[$i]}/data" 2>/dev/null; done
}
trap on_exit EXIT

# shard_options OPTIONS: the libpq `options` of every shard's server (empty: none). Changing a
# server's options closes postgres_fdw's connections to it; the next session opens new ones.
shard_options() {
  local i
  for i in 0 1 2; do
    if [ -n "$1" ]; then coord -c "ALTER SERVER shard$i OPTIONS (ADD options '$1')"
    else coord -c "ALTER SERVER shard$i OPTIONS (DROP options)"; fi
  done
}
# check NAME CONDITION...: runs CONDITION (a command); counts a failure if it fails.
check() {
  local name=$1; shift
  checks=$((checks + 1))
  if "$@"; then echo "ok: $name"; else failures=$((failures + 1)); echo "FAIL: $name"; fi
}
same_file() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -6; return 1; }; }
# short: a plan with its vector literals shortened to '[q]'.
short() { sed -E "s/'\[[^]]{40,}\]'/'[q]'/g"; }

rm -rf "${nodes[@]/#/$work/}"
for i in 0 1 2 3; do "$root/scripts/pg-server.sh" start "$OURS/bin" "$work/${nodes[$i]}/data" "$(node_port "$i")"; done

echo "-- $rows rows of vector($dim) on 3 shards through postgres_fdw, and one local table"
for i in 0 1 2; do
  node_sql "$i" -c "CREATE EXTENSION vector" \
    -c "CREATE TABLE items (id bigint PRIMARY KEY, embedding vector($dim))"
done
coord -c "CREATE EXTENSION vector" -c "CREATE EXTENSION postgres_fdw"
for i in 0 1 2; do
  coord -c "CREATE SERVER shard$i FOREIGN DATA WRAPPER postgres_fdw
      OPTIONS (host '$work/shard$i', port '$(node_port "$i")', dbname 'postgres',
               extensions 'vector', async_capable 'true', batch_size '500')" \
    -c "CREATE USER MAPPING FOR postgres SERVER shard$i OPTIONS (user 'postgres')"
done
coord -c "CREATE TABLE items (id bigint, embedding vector($dim)) PARTITION BY HASH (id)"
for i in 0 1 2; do
  coord -c "CREATE FOREIGN TABLE items_$i PARTITION OF items FOR VALUES WITH (MODULUS 3, REMAINDER $i)
    SERVER shard$i OPTIONS (table_name 'items')"
done
coord -c "SELECT setseed(0.37)" -c "
  CREATE TABLE ref (id bigint PRIMARY KEY, embedding vector($dim));
  INSERT INTO ref SELECT i, array(SELECT random() FROM generate_series(1, $dim) WHERE i > 0)
    FROM generate_series(1, $rows) i;
  CREATE TABLE queries (qid int PRIMARY KEY, v vector($dim));
  INSERT INTO queries SELECT q, array(SELECT random() FROM generate_series(1, $dim) WHERE q > 0)
    FROM generate_series(1, $nq) q;
  INSERT INTO items SELECT id, embedding FROM ref;" >/dev/null
for i in 0 1 2; do node_sql "$i" -c "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_l2_ops)" -c "ANALYZE items"; done
coord -c "CREATE INDEX ref_hnsw ON ref USING hnsw (embedding vector_l2_ops)" -c "ANALYZE ref" -c "ANALYZE items"
echo "loaded and indexed ($(( $(date +%s) - began )) s)"

# placed_on I FROM: every row of shard I with id >= FROM has remainder I; prints their count.
placed_on() {
  local ids out
  ids=$(node_sql "$1" -c "SELECT coalesce(string_agg(id::text, ','), '') FROM items WHERE id >= $2")
  out=$(coord -c "SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('items'::regclass, 3, $1, x)),
    count(*) FROM unnest('{$ids}'::bigint[]) x")
  [ "${out%|*}" = 0 ] || { echo "shard$1 holds ${out%|*} rows of another remainder" >&2; return 1; }
  echo "${out#*|}"
}
counts=() total=0
for i in 0 1 2; do counts[i]=$(placed_on "$i" 0) || counts[i]=-1; total=$((total + counts[i])); done
echo "rows per shard: ${counts[*]}"
check "every row on the shard of its hash remainder, $rows in all" \
  test "$total" = "$rows" -a "${counts[0]}" -gt 0 -a "${counts[1]}" -gt 0 -a "${counts[2]}" -gt 0

echo "-- plans"
q1=$(coord -c "SELECT v FROM queries WHERE qid = 1")
coord -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM items ORDER BY embedding <-> '$q1' LIMIT 10" > "$work/plan.txt"
short < "$work/plan.txt" | grep -Ev '^ *Output:'
shipped=$(grep -c "Remote SQL: SELECT id, embedding FROM public.items ORDER BY (embedding OPERATOR(public.<->) '\[" "$work/plan.txt" || true)
check "ORDER BY embedding <-> '...' shipped to the 3 shards (Remote SQL)" test "$shipped" = 3
if grep -q 'Merge Append' "$work/plan.txt"; then node="Merge Append (synchronous: PostgreSQL 18 runs foreign scans asynchronously only under Append)"
elif grep -q 'Async Foreign Scan' "$work/plan.txt"; then node="Append of Async Foreign Scans"
else node="neither Merge Append nor async Append"; fi
if grep -q 'Remote SQL:.* LIMIT ' "$work/plan.txt"; then limit="shipped"; else limit="not shipped (the shards' cursors run without LIMIT)"; fi
echo "parent: $node; LIMIT $limit"

# per_shard K V: one ORDER BY ... LIMIT K per partition, merged by the coordinator.
per_shard() {
  local i parts=()
  for i in 0 1 2; do parts+=("(SELECT id, embedding <-> '$2' AS d FROM items_$i ORDER BY embedding <-> '$2' LIMIT $1)"); done
  echo "WITH c AS MATERIALIZED (${parts[0]} UNION ALL ${parts[1]} UNION ALL ${parts[2]})
    SELECT id, d FROM c ORDER BY d LIMIT $1"
}
coord -c "EXPLAIN (VERBOSE, COSTS OFF) $(per_shard 10 "$q1")" > "$work/plan_per_shard.txt"
short < "$work/plan_per_shard.txt" | grep -Ev '^ *Output:'
check "per-shard form: 3 Async Foreign Scans" test "$(grep -c 'Async Foreign Scan' "$work/plan_per_shard.txt")" = 3
check "per-shard form: ORDER BY ... LIMIT 10 shipped to the 3 shards" \
  test "$(grep -c "Remote SQL: .* ORDER BY (embedding OPERATOR(public.<->) '\[.*\]') ASC NULLS LAST LIMIT 10::bigint$" "$work/plan_per_shard.txt")" = 3

# Each shard's hnsw index answers its part: its idx_scan grows by one search through the parent
# (read once the coordinator's session, and so the shards' backends, have ended), and
# auto_explain, loaded into the postgres_fdw sessions by the servers' options, logs the plan.
idx_scans() { node_sql "$1" -c "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = '$2'"; }
# search_uses INDEX: one search through the parent reads INDEX on every shard.
search_uses() {
  local i n before=() grew
  for i in 0 1 2; do before[i]=$(idx_scans "$i" "$1"); done
  coord -c "SELECT id FROM items ORDER BY embedding <-> '$q1' LIMIT 10" >/dev/null
  for ((n = 0; n < 50; n++)); do
    grew=0
    for i in 0 1 2; do [ "$(idx_scans "$i" "$1")" -gt "${before[i]}" ] && grew=$((grew + 1)); done
    [ "$grew" = 3 ] && return 0
    sleep 0.2
  done
  echo "$1 was scanned on $grew shards of 3" >&2
  return 1
}
check "one search through the parent: an index scan of items_hnsw on each shard (idx_scan)" search_uses items_hnsw
shard_options "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0"
for i in 0 1 2; do
  wc -c < "$work/shard$i/data.log" > "$work/shard$i/data.log.mark"
done
coord -c "SELECT id FROM items ORDER BY embedding <-> '$q1' LIMIT 10" >/dev/null
sleep 0.5
explained=0
for i in 0 1 2; do
  tail -c +"$(( $(cat "$work/shard$i/data.log.mark") + 1 ))" "$work/shard$i/data.log" > "$work/shard$i.auto_explain"
  grep -A3 'DECLARE c[0-9]* CURSOR FOR' "$work/shard$i.auto_explain" | grep -q 'Index Scan using items_hnsw on items' &&
    explained=$((explained + 1))
done
shard_options ""
grep -A4 'DECLARE c[0-9]* CURSOR FOR' "$work/shard0.auto_explain" | short | sed 's/^/shard0 log: /' || true
check "auto_explain on the shards: the fdw's cursor is an Index Scan using items_hnsw (3 shards)" test "$explained" = 3

# answers TABLE SETTINGS OUT: id and distance of the 10 nearest rows of every query, one psql
# session with SETTINGS, each query's vector a literal (as an application sends it).
answers() {
  coord -c "SELECT format('SELECT %s, id, embedding <-> %L FROM $1 ORDER BY embedding <-> %L LIMIT 10;', qid, v, v)
    FROM queries ORDER BY qid" > "$work/queries_$1.sql"
  { echo "$2"; cat "$work/queries_$1.sql"; } | coord -f - > "$3"
}
# per_shard_answers OUT: the same through the per-shard form.
per_shard_answers() {
  local qid v
  while IFS='|' read -r qid v; do echo "SELECT $qid, id, d FROM ($(per_shard 10 "$v")) s;"; done \
    < <(coord -c "SELECT qid, v FROM queries ORDER BY qid") | coord -f - > "$1"
}

echo "-- exact answers: ref with a sequential scan; the shards with their index scans off"
answers ref "SET enable_indexscan = off; SET enable_bitmapscan = off;" "$work/exact_ref.txt"
check "ref's exact answers: $nq queries x 10 rows" test "$(grep -c . "$work/exact_ref.txt")" = $((nq * 10))
shard_options "-c enable_indexscan=off -c enable_bitmapscan=off"
answers items "" "$work/exact_items.txt"
per_shard_answers "$work/exact_per_shard.txt"
shard_options ""
check "exact: the parent's ids and distances equal ref's ($nq queries)" same_file "$work/exact_ref.txt" "$work/exact_items.txt"
check "exact: the per-shard form's ids and distances equal ref's ($nq queries)" same_file "$work/exact_ref.txt" "$work/exact_per_shard.txt"

echo "-- recall@10 at default settings (hnsw.ef_search = 40 on every server)"
answers ref "SET enable_seqscan = off;" "$work/default_ref.txt"
answers items "" "$work/default_items.txt"
per_shard_answers "$work/default_per_shard.txt"
r_ref=$(recall_of_files "$work/default_ref.txt" "$work/exact_ref.txt")
r_items=$(recall_of_files "$work/default_items.txt" "$work/exact_ref.txt")
r_per=$(recall_of_files "$work/default_per_shard.txt" "$work/exact_ref.txt")
echo "recall@10: one server $r_ref, 3 shards through the parent $r_items, per-shard form $r_per"
check "sharded recall $r_items no more than 0.01 below the single server's $r_ref" at_least "$r_items" "$(python3 -c "print($r_ref - 0.01)")"
check "the per-shard form answers as the parent at default settings" same_file "$work/default_items.txt" "$work/default_per_shard.txt"
# The fdw adds nothing and loses nothing: each shard searched directly, the three top 10s merged.
for i in 0 1 2; do node_sql "$i" -f "$work/queries_items.sql" > "$work/direct_shard$i.txt"; done
python3 - "$work"/direct_shard{0,1,2}.txt > "$work/direct_merged.txt" <<'PY'
import collections, sys
rows = collections.defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        qid, rid, dist = line.strip().split("|")
        rows[int(qid)].append((float(dist), line))
for qid in sorted(rows):
    sys.stdout.write("".join(line for _, line in sorted(rows[qid])[:10]))
PY
check "at default settings the parent answers as the shards' own searches merged (ids and distances)" \
  same_file "$work/direct_merged.txt" "$work/default_items.txt"
answers ref "SET enable_seqscan = off; SET hnsw.ef_search = 120;" "$work/ef120_ref.txt"
echo "for scale: one server at hnsw.ef_search = 120 (3 x 40 candidates): $(recall_of_files "$work/ef120_ref.txt" "$work/exact_ref.txt")"

echo "-- inserts through the parent"
coord -c "SELECT setseed(0.71)" -c "
  CREATE TABLE new_rows AS SELECT i::bigint AS id, array(SELECT random() FROM generate_series(1, $dim) WHERE i > 0)::vector($dim) AS embedding
    FROM generate_series(1000001, 1000030) i;
  INSERT INTO items SELECT * FROM new_rows;" >/dev/null
new=0
for i in 0 1 2; do c=$(placed_on "$i" 1000001) || c=-100; new=$((new + c)); echo "shard$i: $c new rows"; done
check "30 inserted rows, each on the shard of its hash remainder" test "$new" = 30
coord -c "SELECT format('SELECT %s, id, embedding <-> %L FROM items ORDER BY embedding <-> %L LIMIT 1;', id, embedding, embedding)
  FROM new_rows ORDER BY id" | coord -f - > "$work/found.txt"
check "a search through the parent finds each inserted row at distance 0" \
  test "$(awk -F'|' '$1 == $2 && $3 == 0' "$work/found.txt" | grep -c .)" = 30

echo "-- ivfflat ($lists lists on every server)"
coord -c "DELETE FROM items WHERE id > 1000000" -c "DROP INDEX ref_hnsw" \
  -c "CREATE INDEX ref_ivf ON ref USING ivfflat (embedding vector_l2_ops) WITH (lists = $lists)"
for i in 0 1 2; do
  node_sql "$i" -c "DROP INDEX items_hnsw" \
    -c "CREATE INDEX items_ivf ON items USING ivfflat (embedding vector_l2_ops) WITH (lists = $lists)" -c "ANALYZE items"
done
check "one search through the parent: an index scan of items_ivf on each shard (idx_scan)" search_uses items_ivf
shard_options "-c ivfflat.probes=$lists"
answers items "" "$work/ivf_all_probes.txt"
shard_options ""
check "ivfflat.probes = lists on the shards: the parent's ids and distances equal ref's exact ones" \
  same_file "$work/exact_ref.txt" "$work/ivf_all_probes.txt"
answers ref "SET enable_seqscan = off;" "$work/ivf_ref.txt"
answers items "" "$work/ivf_items.txt"
echo "ivfflat recall@10 at probes = 1: one server $(recall_of_files "$work/ivf_ref.txt" "$work/exact_ref.txt")," \
  "3 shards $(recall_of_files "$work/ivf_items.txt" "$work/exact_ref.txt") (not compared: each shard probes its own list)"

echo "sharding: $((checks - failures)) of $checks checks passed, $failures failed; parent plan: ${node%% (*}, LIMIT ${limit%% (*}; recall@10 one server $r_ref, 3 shards $r_items ($(( $(date +%s) - began )) s)"
[ "$failures" = 0 ]
