#!/usr/bin/env bash
# A neighbor link whose block number is InvalidBlockNumber, which ReadBuffer takes as "extend
# the relation", must raise ERRCODE_INDEX_CORRUPTED naming the index, and never grow the index,
# not even from a SELECT.
#  1. A cluster without data checksums, a table of 2,000 vectors and its hnsw index.
#  2. Server stopped: in every neighbor tuple on block 1 the first neighbor's block becomes
#     0xFFFFFFFF, and in a second round a block past the end of the index.
#  3. Searches (each read setting) and an INSERT, which walk through those elements, each raise
#     the error; the index keeps its size; no backend is killed by a signal.
# Usage: tests/hnsw/invalid_block.sh [WORKDIR]   (OURS=..., PORT_OURS)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-invalid-block.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
hnsw_damage_fixture 2000 0.75 "WITH (m = 4)"

# damage BLOCK: in every neighbor tuple on block 1, the first neighbor's block becomes BLOCK.
# Neighbor tuples (type 2): type, unused, count (u16), then ItemPointerData per neighbor
# (block as two u16 halves, high first, then the offset).
damage() {
  python3 - "$file" "$1" <<'PY'
import struct, sys
block = int(sys.argv[2])
with open(sys.argv[1], "r+b") as f:
    f.seek(8192)
    page = bytearray(f.read(8192))
    lower = struct.unpack_from("<H", page, 12)[0]
    changed = 0
    for i in range((lower - 24) // 4):
        word = struct.unpack_from("<I", page, 24 + 4 * i)[0]
        off, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
        if flags == 1 and length >= 10 and page[off] == 2:
            struct.pack_into("<HH", page, off + 4, block >> 16, block & 0xFFFF)
            changed += 1
    f.seek(8192)
    f.write(page)
print(changed)
PY
}

errors=0
# InvalidBlockNumber (ReadBuffer would extend the relation), then a block past the end.
for bad in 4294967295 $((pages + 1000)); do
  changed=$(damage "$bad")
  [ "$changed" -gt 0 ] || fail "no neighbor tuple on block 1"
  echo "-- $changed neighbor lists on block 1 now start with block $bad"
  start ours
  message="ERROR:  index \"t_idx\" links to block $bad past its end"
  for method in prefetch read_stream off; do
    out=$(sql ours -c "SET enable_seqscan = off" -c "SET hnsw.ef_search = 1000" -c "SET hnsw.io_method = $method" \
      -c "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 1) LIMIT 1000) s" 2>&1 || true)
    grep -qF "$message" <<<"$out" || fail "search ($method): $out"
    errors=$((errors + 1))
  done
  out=$(sql ours -c "INSERT INTO t SELECT 3000 + i, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0) FROM generate_series(1, 200) i" 2>&1 || true)
  grep -qF "$message" <<<"$out" || fail "insert: $out"
  errors=$((errors + 1))
  now=$(sql ours -c "SELECT pg_relation_size('t_idx') / 8192")
  [ "$now" = "$pages" ] || fail "the index grew from $pages to $now pages"
  stop ours
done
[ "$errors" = 8 ] || fail "$errors of 8 statements raised the error"
grep -q 'terminated by signal' "$data.log" && fail "a backend was killed by a signal"
echo "invalid block: ok ($errors statements raised the corruption error, the index kept $pages pages)"
