#!/usr/bin/env bash
# An insert walks the hnsw index's pages from the metapage's insert page along their next links
# until one has room. A corrupted link must neither make it loop (uncancellable, as it was) nor
# extend the index from an invalid block: it raises ERRCODE_INDEX_CORRUPTED naming the index,
# the server stays up, and searches still work.
#  1. A cluster without data checksums, a table of 3,000 vectors and its hnsw index (full pages).
#  2. Server stopped: the metapage's insert page is set to block 1 and block 2's next link to
#     block 1, so the walk 1 -> 2 -> 1 ... never finds room. An INSERT (statement_timeout 20s,
#     the client gives up after 60 s) must fail at once with the loop error, and so must a
#     VACUUM, whose passes follow the same links.
#  3. Then block 2's link points past the end of the index: the INSERT raises the past-the-end
#     error and the index does not grow.
#  4. No backend was killed by a signal; a search returns its rows.
# Usage: tests/hnsw/chain_cycle.sh [WORKDIR]   (OURS=..., PORT_OURS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-chain-cycle.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
hnsw_damage_fixture 3000 0.25
[ "$pages" -gt 4 ] || fail "only $pages index pages"

# set_u32 BLOCK OFFSET VALUE: a little-endian 4-byte field of one page.
set_u32() {
  python3 - "$file" "$1" "$2" "$3" <<'PY'
import sys
path, block, offset, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path, "r+b") as f:
    f.seek(block * 8192 + offset)
    f.write(value.to_bytes(4, "little"))
PY
}
# The metapage's insertPage (after the page header and eight fields) and a page's next link
# (the first field of the special space, 8 bytes from the end).
INSERT_PAGE=48 NEXT=8184
set_u32 0 $INSERT_PAGE 1
set_u32 2 $NEXT 1

start ours
insert="INSERT INTO t VALUES (0, array_fill(0.5, ARRAY[8])::vector)"
try() {
  timeout 60 "$OURS/bin/psql" -X -q -At -h "$work/cluster" -p "$PORT_OURS" -U postgres -d postgres \
    -c "SET statement_timeout = '20s'" -c "$1" 2>&1 || true
}
# loops_at_once WHAT STATEMENT: the statement raises the loop error, well within its timeout.
loops_at_once() {
  local started took out
  started=$(date +%s)
  out=$(try "$2")
  took=$(( $(date +%s) - started ))
  echo "$out"
  grep -q 'ERROR:  index "t_idx" has a page chain that loops' <<<"$out" ||
    fail "$1 along a looping chain did not raise the loop error (${took}s): $out"
  [ "$took" -lt 20 ] || fail "the looping $1 took ${took}s"
}
loops_at_once INSERT "$insert"
sql ours -c "DELETE FROM t WHERE id % 7 = 0"
loops_at_once VACUUM "VACUUM t"

stop ours
set_u32 2 $NEXT $((pages + 1000))
start ours
out=$(try "$insert")
echo "$out"
grep -q "ERROR:  index \"t_idx\" links to block $((pages + 1000)) past its end" <<<"$out" ||
  fail "an insert along a link past the end did not raise the past-the-end error: $out"
now=$(sql ours -c "SELECT pg_relation_size('t_idx') / 8192")
[ "$now" = "$pages" ] || fail "the index grew from $pages to $now pages"

grep -q 'terminated by signal' "$data.log" && fail "a backend was killed by a signal"
found=$(sql ours -c "SET enable_seqscan = off" -c "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> array_fill(0.5, ARRAY[8])::vector LIMIT 10) s")
[ "$found" = 10 ] || fail "a search after the errors returned $found rows"
echo "chain cycle: ok"
