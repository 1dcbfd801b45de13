#!/usr/bin/env bash
# Every page an hnsw walk, insert or vacuum reads must carry pgvector's page id (0xFF90) in its
# special space: a page that does not is reported as corruption (ERRCODE_INDEX_CORRUPTED, naming
# the index and the block) before anything decodes it, and the server stays up.
#  1. A cluster without data checksums (they would catch the damage first), a table of 2,000
#     vectors and its hnsw index.
#  2. With the server stopped, the page id of one element page is overwritten, another element
#     page is zeroed; searches, inserts and VACUUM must raise the corruption error for one of
#     them. Then the metapage's page id is overwritten: any use of the index raises it.
#  3. No backend is killed by a signal; the index is dropped and rebuilt fine.
# Usage: tests/hnsw/page_id_check.sh [WORKDIR]   (OURS=..., PORT_OURS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-page-id.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
hnsw_damage_fixture 2000 0.5
[ "$pages" -gt 6 ] || fail "only $pages index pages"

# patch BLOCK MODE: "id" overwrites the page id (the last two bytes), "zero" zeroes the page.
patch() {
  python3 - "$file" "$1" "$2" <<'PY'
import sys
path, block, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "r+b") as f:
    f.seek(block * 8192)
    page = bytearray(f.read(8192))
    if mode == "zero":
        page = bytearray(8192)
    else:
        page[8190:8192] = (0x1234).to_bytes(2, "little")
    f.seek(block * 8192)
    f.write(page)
PY
}
patch 1 id
patch 3 zero

start ours
try() { sql ours -c "SET enable_seqscan = off" -c "SET hnsw.ef_search = 1000" -c "$1" 2>&1 || true; }
errors=0
for stmt in "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 1) LIMIT 1000) s" \
  "INSERT INTO t SELECT 3000 + i, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0) FROM generate_series(1, 50) i" \
  "VACUUM t"; do
  [ "$stmt" = "VACUUM t" ] && sql ours -c "DELETE FROM t WHERE id % 10 = 0"
  out=$(try "$stmt")
  if grep -qE 'ERROR:  index "t_idx" contains (corrupted page at block 1|unexpected zero page at block 3)$' <<<"$out"; then
    errors=$((errors + 1))
  else
    fail "no corruption error for: $stmt
$out"
  fi
done
[ "$errors" = 3 ] || fail "$errors corruption errors, expected 3"
echo "damaged element pages: 3 of 3 statements raised the corruption error"

stop ours
patch 0 id
start ours
out=$(try "SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 1) LIMIT 5")
grep -q 'ERROR:  index "t_idx" contains corrupted page at block 0' <<<"$out" ||
  fail "damaged metapage not reported: $out"
grep -q 'HINT:  Please REINDEX it.' <<<"$out" || fail "no hint: $out"
echo "damaged metapage: reported"

! grep -qE "terminated by signal|all server processes terminated" "$data.log" ||
  fail "a backend crashed: $(grep -E 'terminated by signal' "$data.log")"
sql ours -c "DROP INDEX t_idx" -c "CREATE INDEX t_idx ON t USING hnsw (v vector_l2_ops)"
n=$(sql ours -c "SET enable_seqscan = off" -c "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 1) LIMIT 5) s")
[ "$n" = 5 ] || fail "rebuilt index returned $n rows"
echo "no backend killed; the index was rebuilt"
