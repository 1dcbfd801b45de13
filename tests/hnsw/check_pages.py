#!/usr/bin/env python3
"""Structural check of an hnsw index in pgvector 0.8.6's page format (an amcheck of sorts).

Usage: check_pages.py PAGES_HEX CTIDS [--exact] [--concurrent] [--crashed]
  PAGES_HEX  one page per line, hex (SELECT encode(get_raw_page(index, b), 'hex') ...)
  CTIDS      the table's row TIDs, one "(block,offset)" per line
  --exact    the index holds exactly the table's rows (after VACUUM); otherwise it may also
             hold heap TIDs of deleted rows not vacuumed yet
  --concurrent  the index was written by concurrent inserts and vacuums: a neighbor listed
             twice in one list is counted, not a problem (two back-links to the same new
             element can race; pgvector 0.8.6's insert and repair check for it without a
             lock between them)
  --crashed  the server crashed while the index grew: pages that a crash left all zeros (the
             relation was extended, the page's first WAL record never flushed) are counted, not
             a problem, as the verifier counts them

Decodes every page independently of the extension's code and checks: the metapage, the page
chain, that every item is an element or neighbor tuple, that each element has its own neighbor
tuple (same version, (level + 2) * m slots, on the same page right after it or first on the next
page), the neighbor lists (valid slots first, pointing at elements that exist, are not deleted
and reach that layer, never at themselves), deleted elements (no heap TIDs, zeroed value, no
neighbors, no live element links to them), heap TIDs (each indexed once; every row indexed)
and the entry point (an element that is not deleted, at the highest level of the elements that
still have heap TIDs). Prints a summary; exits 1 with the problems found.
"""
import struct
import sys
from collections import deque

BLCKSZ = 8192
PAGE_ID = 0xFF90
MAGIC = 0xA953A953
INVALID_BLOCK = 0xFFFFFFFF


def tid_at(b, at):
    hi, lo, off = struct.unpack_from("<HHH", b, at)
    return ((hi << 16) | lo, off)


def maxalign(n):
    return (n + 7) & ~7


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    exact = "--exact" in sys.argv
    concurrent = "--concurrent" in sys.argv
    crashed = "--crashed" in sys.argv
    duplicates = 0
    pages = [bytes.fromhex(line.strip()) for line in open(args[0]) if line.strip()]
    rows = set()
    for line in open(args[1]):
        line = line.strip()
        if line:
            blk, off = line.strip("()").split(",")
            rows.add((int(blk), int(off)))
    problems = []

    def bad(msg):
        if len(problems) < 50:
            problems.append(msg)

    if len(pages) < 2:
        print("FAIL: fewer than 2 pages")
        sys.exit(1)
    for i, p in enumerate(pages):
        if len(p) != BLCKSZ:
            bad(f"page {i} has {len(p)} bytes")
    meta = pages[0]
    (magic, version, dims, m, efc, eblk, eoff, elevel, insert_page) = struct.unpack_from(
        "<IIIHHIHhI", meta, 24
    )
    if magic != MAGIC or version != 1:
        bad(f"metapage magic {magic:#x} version {version}")
    if struct.unpack_from("<H", meta, 12)[0] != 52:
        bad("metapage pd_lower is not 52")

    zero_pages = set()
    if crashed:
        zero_pages = {blk for blk in range(1, len(pages)) if pages[blk] == bytes(BLCKSZ)}
    elements = {}  # tid -> dict
    neighbors = {}  # tid -> (version, slots)
    for blk in range(0, len(pages)):
        p = pages[blk]
        if blk in zero_pages:
            continue
        lower, upper, special = struct.unpack_from("<HHH", p, 12)
        if special != BLCKSZ - 8:
            bad(f"page {blk}: special at {special}")
            continue
        nxt, unused, page_id = struct.unpack_from("<IHH", p, special)
        if page_id != PAGE_ID or unused != 0:
            bad(f"page {blk}: page id {page_id:#x}")
        if blk == 0:
            continue
        for i in range((lower - 24) // 4):
            word = struct.unpack_from("<I", p, 24 + 4 * i)[0]
            off, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
            tid = (blk, i + 1)
            if flags != 1 or length == 0:
                bad(f"{tid}: line pointer flags {flags} length {length}")
                continue
            if length != maxalign(length) or off < upper or off + length > special:
                bad(f"{tid}: item at {off} length {length}")
                continue
            item = p[off : off + length]
            if item[0] == 1:
                level, deleted, ver = item[1], item[2], item[3]
                tids = [tid_at(item, 4 + 6 * k) for k in range(10)]
                used = 0
                while used < 10 and tids[used][1] != 0:
                    used += 1
                if any(t[1] != 0 for t in tids[used:]):
                    bad(f"{tid}: valid heap TID after an invalid one")
                elements[tid] = dict(
                    level=level,
                    deleted=deleted,
                    version=ver,
                    heap=tids[:used],
                    ntid=tid_at(item, 64),
                    data=item[72:],
                )
                if deleted not in (0, 1) or not 1 <= ver <= 15:
                    bad(f"{tid}: deleted {deleted} version {ver}")
            elif item[0] == 2:
                ver, count = item[1], struct.unpack_from("<H", item, 2)[0]
                if 4 + 6 * count > length:
                    bad(f"{tid}: neighbor count {count} exceeds the item")
                    continue
                neighbors[tid] = (ver, [tid_at(item, 4 + 6 * k) for k in range(count)])
            else:
                bad(f"{tid}: tuple type {item[0]}")

    # Page chain.
    chain, blk = [], 1
    while blk != INVALID_BLOCK:
        if blk >= len(pages) or blk in chain:
            bad(f"page chain broken at {blk}")
            break
        chain.append(blk)
        blk = struct.unpack_from("<I", pages[blk], BLCKSZ - 8)[0]
    element_pages = [blk for blk in range(1, len(pages)) if blk not in zero_pages]
    if sorted(chain) != element_pages:
        bad(f"page chain visits {len(chain)} of {len(element_pages)} element pages")
    if insert_page not in chain:
        bad(f"insert page {insert_page} is not an element page")

    # Elements and their neighbor tuples.
    owners = {}
    for tid, e in elements.items():
        nt = e["ntid"]
        if nt in owners:
            bad(f"{tid} and {owners[nt]} share neighbor tuple {nt}")
        owners[nt] = tid
        if nt not in neighbors:
            bad(f"{tid}: neighbor tuple {nt} missing")
            continue
        if not ((nt[0] == tid[0] and nt[1] == tid[1] + 1) or (nt[0] == tid[0] + 1 and nt[1] == 1)):
            bad(f"{tid}: neighbor tuple at {nt}")
        nver, slots = neighbors[nt]
        if nver != e["version"]:
            bad(f"{tid}: version {e['version']}, neighbor tuple version {nver}")
        if len(slots) != (e["level"] + 2) * m:
            bad(f"{tid}: {len(slots)} neighbor slots for level {e['level']}")
            continue
        e["layers"] = []
        for layer in range(e["level"] + 1):
            start = (e["level"] - layer) * m
            lm = 2 * m if layer == 0 else m
            part = slots[start : start + lm]
            n = 0
            while n < lm and part[n][1] != 0:
                n += 1
            if any(t[1] != 0 for t in part[n:]):
                bad(f"{tid}: layer {layer} has a valid slot after an invalid one")
            e["layers"].append(part[:n])
        if e["deleted"]:
            if e["heap"]:
                bad(f"{tid}: deleted with heap TIDs")
            if any(e["layers"]):
                bad(f"{tid}: deleted with neighbors")
            if any(e["data"]):
                bad(f"{tid}: deleted with a value")
    if len(owners) != len(neighbors):
        bad(f"{len(neighbors) - len(owners)} neighbor tuples belong to no element")

    live = {t: e for t, e in elements.items() if not e["deleted"]}
    for tid, e in live.items():
        for layer, lst in enumerate(e.get("layers", [])):
            if len(set(lst)) != len(lst):
                if concurrent:
                    duplicates += len(lst) - len(set(lst))
                else:
                    bad(f"{tid}: layer {layer} lists an element twice")
            for n in lst:
                if n == tid:
                    bad(f"{tid}: links to itself on layer {layer}")
                elif n not in elements:
                    bad(f"{tid}: layer {layer} links to {n}, not an element")
                elif elements[n]["deleted"]:
                    bad(f"{tid}: layer {layer} links to deleted {n}")
                elif elements[n]["level"] < layer:
                    bad(f"{tid}: layer {layer} links to {n} of level {elements[n]['level']}")

    # Heap TIDs.
    seen = {}
    for tid, e in live.items():
        for h in e["heap"]:
            if h in seen:
                bad(f"heap TID {h} indexed by {seen[h]} and {tid}")
            seen[h] = tid
    missing = rows - set(seen)
    extra = set(seen) - rows
    if missing:
        bad(f"{len(missing)} rows not indexed, e.g. {sorted(missing)[:5]}")
    if exact and extra:
        bad(f"{len(extra)} heap TIDs indexed that are not rows, e.g. {sorted(extra)[:5]}")

    # Entry point.
    with_tids = [e for e in live.values() if e["heap"]]
    if eblk == INVALID_BLOCK:
        if with_tids:
            bad("no entry point, but elements with heap TIDs")
    else:
        entry = (eblk, eoff)
        e = elements.get(entry)
        if e is None or e["deleted"]:
            bad(f"entry point {entry} is not a live element")
        elif e["level"] != elevel:
            bad(f"entry point level {elevel}, element level {e['level']}")
        top = max((x["level"] for x in with_tids), default=-1)
        if elevel < top:
            bad(f"entry point level {elevel} below the highest element level {top}")

    # Reachability on layer 0 (informational: HNSW does not promise it).
    unreachable = 0
    if eblk != INVALID_BLOCK and (eblk, eoff) in live:
        seen_r = {(eblk, eoff)}
        queue = deque(seen_r)
        while queue:
            cur = queue.popleft()
            for lst in live[cur].get("layers", []):
                for n in lst:
                    if n in live and n not in seen_r:
                        seen_r.add(n)
                        queue.append(n)
        unreachable = sum(1 for t, e in live.items() if e["heap"] and t not in seen_r)

    print(
        f"{len(pages)} pages, {len(elements)} elements ({len(elements) - len(live)} deleted), "
        f"{len(seen)} heap TIDs ({len(extra)} of deleted rows), m {m}, "
        f"top level {elevel}, {unreachable} unreachable"
        + (f", {duplicates} duplicate links" if duplicates else "")
        + (f", {len(zero_pages)} pages left all zeros by the crash" if zero_pages else "")
    )
    if problems:
        for p in problems:
            print("  " + p)
        print(f"FAIL: {len(problems)} problems")
        sys.exit(1)


if __name__ == "__main__":
    main()
