#!/usr/bin/env bash
# Going back to pgvector 0.8.6's library, and on to its next release, from either side:
#  A. A cluster made on ours (vector, vector_rs, plain, quantized and ivfflat indexes, our
#     settings) goes back with the README's `going-back` block as written. pgvector's library
#     then answers every query with the ids ours gave; a pg_dump taken then restores on pgvector
#     alone without an error; the next release's update script applies.
#  B. A cluster made by pgvector comes to ours (the README's `switch` block), takes writes and a
#     quantized index there, and goes back the same way: pgvector answers as ours did, the
#     verifier having passed before, and the next release's update script applies.
#  C. Ours applies the next release's script too (our release that follows pgvector's ships it),
#     and vector_rs is created and answers after it.
#  D. A dump taken with a quantized index fails to restore on pgvector with exactly one error,
#     unrecognized parameter "quantization", as the README says.
# pgvector's next release is a stand-in, tests/compat/next_release/vector--0.8.6--0.8.6.99.sql,
# installed beside both libraries' scripts for this test only.
#   tests/compat/going_back.sh WORKDIR
set -euo pipefail
work=${1:?usage: $0 WORKDIR}
source "$(dirname "$0")/../lib.sh"
next=vector--0.8.6--0.8.6.99.sql
ours_ext=$("$OURS/bin/pg_config" --sharedir)/extension
pgvector_ext=$("$PGVECTOR/bin/pg_config" --sharedir)/extension
for d in "$ours_ext" "$pgvector_ext"; do
  [ ! -e "$d/$next" ] || fail "$d/$next is installed already"
  install -m 644 "$here/compat/next_release/$next" "$d/"
done
restore_port=$((PORT_PGVECTOR + 1))
restore_data=$work/restore/data
finish() {
  rm -f "$ours_ext/$next" "$pgvector_ext/$next"
  "$root/scripts/pg-server.sh" stop "$PGVECTOR/bin" "$restore_data" 2>/dev/null
  cleanup_servers
}
trap finish EXIT
block() { "$root/tests/readme_block.sh" "$1"; }
extensions() {
  sql "$1" -c "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname)
               FROM pg_extension WHERE extname LIKE 'vector%'"
}
# answers LIB FILE: every index's 10 ids for the queries id <= 20 at default settings, a line each.
answers() {
  sql "$1" -c "SET enable_seqscan = off" -c "
    SELECT 'l2', q.id, array(SELECT id FROM items ORDER BY v <-> q.v LIMIT 10) FROM items q WHERE q.id <= 20
    UNION ALL SELECT 'cos', q.id, array(SELECT id FROM items ORDER BY v <=> q.v LIMIT 10) FROM items q WHERE q.id <= 20
    UNION ALL SELECT 'ivf', q.id, array(SELECT id FROM items ORDER BY h <-> q.h LIMIT 10) FROM items q WHERE q.id <= 20
    ORDER BY 1, 2" >"$2"
  local queries
  queries=$(sql "$1" -c "SELECT 3 * count(*) FROM items WHERE id <= 20")
  [ "$(grep -c '{[0-9]*\(,[0-9]*\)\{9\}}$' "$2")" = "$queries" ] || fail "$1: not $queries answers of 10 ids in $2"
}
# next_release LIB: the stand-in's update applies, and what it made works.
next_release() {
  sql "$1" -c "ALTER EXTENSION vector UPDATE TO '0.8.6.99'"
  [ "$(sql "$1" -c "SELECT vector_dims_next('[1,2,3]'), obj_description('vector'::regtype, 'pg_type')")" = \
    "3|next release: single-precision vector" ] || fail "$1: the next release's objects do not answer"
  sql "$1" -c "CREATE INDEX items_next ON items USING hnsw (v vector_l2_next_ops)" \
    -c "SET enable_seqscan = off" -c "SELECT count(*) FROM (SELECT id FROM items ORDER BY v <-> '[1,0,0,0,0,0,0,0]' LIMIT 5) s" \
    -c "DROP INDEX items_next" >/dev/null
}
table() {
  sql "$1" -c "SELECT setseed($2)" -c "
    CREATE TABLE items (id int PRIMARY KEY, v vector(8), h halfvec(8));
    INSERT INTO items SELECT i, a::vector(8), a::halfvec(8)
      FROM generate_series(1, 3000) i, LATERAL (SELECT array_agg(random() - 0.5) a FROM generate_series(1, 8) WHERE i > 0) s;
    CREATE INDEX items_l2 ON items USING hnsw (v vector_l2_ops);
    CREATE INDEX items_ivf ON items USING ivfflat (h halfvec_l2_ops) WITH (lists = 10);" >/dev/null
}
[ -n "$(block going-back)" ] && [ -n "$(block switch)" ] || fail "README blocks missing"

echo "-- A. a cluster of ours goes back to pgvector"
start ours
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs"
table ours 0.11
sql ours -c "CREATE INDEX items_cos ON items USING hnsw (v vector_cosine_ops) WITH (quantization = 'rabitq2')" \
  -c "ALTER DATABASE postgres SET hnsw.beam_width = 2"
sql ours -f <(block going-back) >"$work/a-going-back.out"
grep -q '^fixed|index items_cos on items|' "$work/a-going-back.out" || fail "A: the quantized index was not fixed"
grep -q '^fixed|setting hnsw.beam_width of database postgres|' "$work/a-going-back.out" || fail "A: the setting was not fixed"
# The block's second result (after fix => true) starts at its second "ok" row.
[ "$(awk '/^ok\|/ { n++ } n == 2 && /^blocks\|/' "$work/a-going-back.out")" = "" ] ||
  fail "A: findings left after fix: $(cat "$work/a-going-back.out")"
[ "$(extensions ours)" = "vector 0.8.6" ] || fail "A: extensions after the README's block: $(extensions ours)"
answers ours "$work/a-ours.txt"
"$OURS/bin/pg_dump" -h "$work/cluster" -p "$PORT_OURS" -U postgres -Fc -f "$work/a.dump" postgres
stop ours
start pgvector
answers pgvector "$work/a-pgvector.txt"
cmp -s "$work/a-ours.txt" "$work/a-pgvector.txt" || fail "A: pgvector answers differently: $(diff "$work/a-ours.txt" "$work/a-pgvector.txt" | head -5)"
echo "   $(wc -l <"$work/a-ours.txt") answers identical on pgvector's library"
rows="SELECT count(*), md5(string_agg(v::text || h::text, ',' ORDER BY id)) FROM items"
a_rows=$(sql pgvector -c "$rows")
next_release pgvector
echo "   the next release's update applies on pgvector: $(extensions pgvector)"
stop pgvector
"$root/scripts/pg-server.sh" start "$PGVECTOR/bin" "$restore_data" "$restore_port"
"$PGVECTOR/bin/pg_restore" -h "$work/restore" -p "$restore_port" -U postgres -d postgres --exit-on-error \
  "$work/a.dump" 2>"$work/a-restore.err" || fail "A: the dump does not restore on pgvector: $(head -5 "$work/a-restore.err")"
[ ! -s "$work/a-restore.err" ] || fail "A: pg_restore said: $(head -5 "$work/a-restore.err")"
rsql() { "$PGVECTOR/bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work/restore" -p "$restore_port" -U postgres -d postgres "$@"; }
[ "$(rsql -c "$rows")" = "$a_rows" ] || fail "A: the restored rows differ"
[ "$(rsql -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'items'")" = 4 ] || fail "A: indexes missing after the restore"
rsql -c "SET enable_seqscan = off" -c "SELECT count(*) FROM (SELECT id FROM items ORDER BY v <=> '[1,0,0,0,0,0,0,0]' LIMIT 10) s" >/dev/null
echo "   a pg_dump taken after it restores on pgvector alone, without an error"
"$root/scripts/pg-server.sh" stop "$PGVECTOR/bin" "$restore_data"
rm -rf "$work/restore"

echo "-- B. a cluster of pgvector comes to ours and goes back"
rm -rf "$work/cluster"
start pgvector
sql pgvector -c "CREATE EXTENSION vector"
table pgvector 0.22
stop pgvector
start ours
sql ours -f <(block switch) >/dev/null
[ "$(extensions ours)" = "vector 0.8.6, vector_rs 1.0" ] || fail "B: extensions after the README's switch: $(extensions ours)"
sql ours -c "SELECT setseed(0.5)" -c "
  INSERT INTO items SELECT i, a::vector(8), a::halfvec(8)
    FROM generate_series(3001, 3500) i, LATERAL (SELECT array_agg(random() - 0.5) a FROM generate_series(1, 8) WHERE i > 0) s;
  DELETE FROM items WHERE id % 9 = 0" -c "VACUUM items" \
  -c "CREATE INDEX items_cos ON items USING hnsw (v vector_cosine_ops) WITH (quantization = 'rabitq4')" >/dev/null
out=$(sql ours -c "SET enable_seqscan = off" -c "SELECT count(*) FROM (SELECT id FROM items ORDER BY v <-> '[1,0,0,0,0,0,0,0]' LIMIT 5) s" \
  -c "SELECT hops > 0 FROM hnsw_last_scan_stats()" -c "SELECT hnsw_index_parent_check('items_l2', true), ivfflat_index_parent_check('items_ivf', true)")
[ "$out" = $'5\nt\n|' ] || fail "B: vector_rs's functions gave: $out"
sql ours -f <(block going-back) >"$work/b-going-back.out"
grep -q '^fixed|index items_cos on items|' "$work/b-going-back.out" || fail "B: the quantized index was not fixed"
[ "$(extensions ours)" = "vector 0.8.6" ] || fail "B: extensions after going back: $(extensions ours)"
answers ours "$work/b-ours.txt"
stop ours
start pgvector
answers pgvector "$work/b-pgvector.txt"
cmp -s "$work/b-ours.txt" "$work/b-pgvector.txt" || fail "B: pgvector answers differently: $(diff "$work/b-ours.txt" "$work/b-pgvector.txt" | head -5)"
echo "   $(wc -l <"$work/b-ours.txt") answers identical on pgvector's library"
next_release pgvector
echo "   the next release's update applies on pgvector: $(extensions pgvector)"
stop pgvector

echo "-- C. ours applies the next release's update script too"
rm -rf "$work/cluster"
start ours
sql ours -c "CREATE EXTENSION vector"
table ours 0.33
next_release ours
out=$(sql ours -c "CREATE EXTENSION vector_rs" -c "SET enable_seqscan = off" \
  -c "SELECT count(*) FROM (SELECT id FROM items ORDER BY v <-> '[1,0,0,0,0,0,0,0]' LIMIT 5) s" \
  -c "SELECT hops > 0 FROM hnsw_last_scan_stats()")
[ "$out" = $'5\nt' ] || fail "C: vector_rs gave after the update: $out"
echo "   $(extensions ours), and vector_rs answers"

echo "-- D. a dump with a quantized index does not restore on pgvector alone"
sql ours -c "CREATE INDEX items_q ON items USING hnsw (v vector_cosine_ops) WITH (quantization = 'rabitq2')" \
  -c "DROP EXTENSION vector_rs"
"$OURS/bin/pg_dump" -h "$work/cluster" -p "$PORT_OURS" -U postgres -Fc -f "$work/d.dump" postgres
stop ours
"$root/scripts/pg-server.sh" start "$PGVECTOR/bin" "$restore_data" "$restore_port"
"$PGVECTOR/bin/pg_restore" -h "$work/restore" -p "$restore_port" -U postgres -d postgres "$work/d.dump" \
  2>"$work/d-restore.err" && fail "D: the dump with a quantized index restored"
errors=$(grep -c '^pg_restore: error:' "$work/d-restore.err" || true)
[ "$errors" = 1 ] && grep -q 'unrecognized parameter "quantization"' "$work/d-restore.err" ||
  fail "D: expected one error (unrecognized parameter \"quantization\"), got $errors: $(head -8 "$work/d-restore.err")"
[ "$(rsql -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'items'")" = 3 ] || fail "D: the other indexes did not restore"
echo "   one error, unrecognized parameter \"quantization\"; the table and its other indexes restored"
echo "going back: both ways, and onto pgvector's next release"
