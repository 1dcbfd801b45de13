#!/usr/bin/env bash
# The pages of an ivfflat build: the load counts the entry pages ahead and adds them to the index
# many at a time, so every block must be the one that adding pages one by one gives.
#  1. A server with shared_buffers 128MB (pages added 64 at a time), then with the smallest,
#     128kB (the buffer manager then lets a backend pin one more buffer at a time, so each
#     extension gets fewer pages than asked).
#  2. Builds with many lists and few rows (thousands of empty lists, counted when the sort
#     ends), with few lists and 768 dimensions (two entries a page), an unlogged table's index
#     (its INIT fork too), serially and with parallel_workers = 2 on the table.
#  3. Each index: the verifier finds every page on a chain (metapage + list pages + entry
#     pages = all pages: none added and left unused) and nothing wrong; with probes = lists
#     the index answers as a sequential scan does.
# Usage: tests/ivfflat/build_pages.sh [WORKDIR]   (OURS=..., PORT_OURS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/ivfflat-build-pages.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"

start ours
sql ours -c "ALTER SYSTEM SET max_parallel_maintenance_workers = 2"
sql ours -c "CREATE EXTENSION vector" -c "CREATE EXTENSION vector_rs" -c "SELECT setseed(0.3)" -c "
  CREATE TABLE small (id int, v vector(3));
  INSERT INTO small SELECT i, ARRAY[random(), random(), random()] FROM generate_series(1, 20000) i;
  CREATE TABLE wide (id int, v vector(768));
  INSERT INTO wide SELECT i, array(SELECT random() FROM generate_series(1, 768) WHERE i > 0)
    FROM generate_series(1, 1500) i;
  CREATE UNLOGGED TABLE u (id int, v vector(3));
  INSERT INTO u SELECT id, v FROM small WHERE id <= 5000;
  ALTER TABLE wide SET (parallel_workers = 2);" >/dev/null

# check INDEX TABLE LISTS: verifier summary adds up, and exact answers at probes = lists.
check() {
  local index=$1 table=$2 lists=$3 summary pages list_pages entry_pages differ
  summary=$(PGOPTIONS="-c client_min_messages=debug1" sql ours \
    -c "SELECT ivfflat_index_parent_check('$index', true)" 2>&1 | grep "entries on" || true)
  [ -n "$summary" ] || fail "$index: no verifier summary"
  read -r pages list_pages entry_pages < <(sed -E \
    's/.*: ([0-9]+) pages, [0-9]+ lists on ([0-9]+) pages, [0-9]+ entries on ([0-9]+) pages.*/\1 \2 \3/' <<<"$summary")
  [ "$pages" = "$((1 + list_pages + entry_pages))" ] ||
    fail "$index: $pages pages, but 1 + $list_pages list pages + $entry_pages entry pages"
  [ "$(sql ours -c "SELECT pg_relation_size('$index') / 8192")" = "$pages" ] ||
    fail "$index: the verifier did not see every block"
  differ=$(sql ours -c "SET ivfflat.probes = $lists" -c "
    SELECT count(*) FROM generate_series(1, 20) q, LATERAL (
      SELECT (SELECT array_agg(id) FROM (SELECT id FROM $table ORDER BY v <-> (SELECT v FROM $table WHERE id = q * 7) LIMIT 5) a)
        IS DISTINCT FROM
        (SELECT array_agg(id) FROM (SELECT id FROM $table ORDER BY (v <-> (SELECT v FROM $table WHERE id = q * 7)) + 0 LIMIT 5) b) AS d) x
    WHERE d")
  [ "$differ" = 0 ] || fail "$index: $differ of 20 queries differ from a sequential scan"
  echo "   $index: $pages pages = 1 + $list_pages list pages + $entry_pages entry pages; exact at probes = $lists"
}

# builds SETTING: every index, each checked, then dropped.
builds() {
  echo "-- shared_buffers $1"
  sql ours -c "ALTER SYSTEM SET shared_buffers = '$1'"
  stop ours
  start ours
  [ "$(sql ours -c 'SHOW shared_buffers')" = "$1" ] || fail "shared_buffers was not set to $1"
  sql ours -c "SET maintenance_work_mem = '1GB'" \
    -c "CREATE INDEX small_idx ON small USING ivfflat (v vector_l2_ops) WITH (lists = 5000)"
  check small_idx small 5000
  sql ours -c "SET max_parallel_maintenance_workers = 0" \
    -c "CREATE INDEX wide_idx ON wide USING ivfflat (v vector_l2_ops) WITH (lists = 10)"
  check wide_idx wide 10
  sql ours -c "CREATE INDEX wide_par_idx ON wide USING ivfflat (v vector_cosine_ops) WITH (lists = 300)"
  check wide_par_idx wide 300
  # An unlogged table's build WAL-logs its INIT fork with log_newpage_range, which pins 32
  # buffers at once: with 16 that fails ("no unpinned buffers available") on pgvector too.
  if [ "$1" != 128kB ]; then
    sql ours -c "CREATE INDEX u_idx ON u USING ivfflat (v vector_l2_ops) WITH (lists = 700)"
    check u_idx u 700
  fi
  sql ours -c "DROP INDEX small_idx, wide_idx, wide_par_idx" -c "DROP INDEX IF EXISTS u_idx"
}

# 128MB lets a backend pin about a hundred buffers more: pages are added 64 at a time.
builds 128MB
builds 128kB
echo "OK: ivfflat build pages ($work)"
