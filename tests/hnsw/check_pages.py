#!/usr/bin/env python3
"""Structural check of an hnsw index in pgvector 0.8.6's page format (an amcheck of sorts),
or in our quantized format (WITH (quantization = 'rabitqN'), crates/formats/src/hnsw_codes.rs).

Usage: check_pages.py PAGES_HEX CTIDS [--exact] [--concurrent] [--crashed] [--raw]
  PAGES_HEX  one page per line, hex (SELECT encode(get_raw_page(index, b), 'hex') ...); with
             --raw, the index's data file itself
  CTIDS      the table's row TIDs, one "(block,offset)" per line, or "(block,offset)|VALUE"
             with the row's value in its text form ('[1,2.5,...]', vector or halfvec): then
             the vector each row's element holds (its value, or for a quantized index the
             vector tuple its code record points at) must be exactly the row's
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
chain, that every item is an element or neighbor tuple, that each element's value is a varlena
that fills its item (maxaligned), that each element has its own neighbor
tuple (same version, (level + 2) * m slots, on the same page right after it or first on the next
page), the neighbor lists (valid slots first, pointing at elements that exist, are not deleted
and reach that layer, never at themselves), deleted elements (no heap TIDs, zeroed value, no
neighbors, no live element links to them), heap TIDs (each indexed once; every row indexed)
and the entry point (an element that is not deleted, at the highest level of the elements that
still have heap TIDs). Prints a summary; exits 1 with the problems found.

A quantized index (metapage magic 0xA953C0DE) is checked the same way, and also: the quantizer
section after pgvector's metapage fields (format 1 or 2, a code width of 1, 2, 4 or 8 bits, a metric
of 1 or 2, the index's dimensions, a stored vector size of a vector or halfvec of those, a
finite half-precision centroid, pd_lower just past it (format 2: past the region count, 1 to
4096, and the first centroid page that follow it), a vector insert page that is a vector page);
format 2's centroid pages (spare half-word 2), one item each, chained from the metapage's first
centroid page, holding exactly count * dims finite half-precision values; every record's region
below the count (0 in format 1); vector pages (special space's spare half-word 1; graph pages keep 0) are off the graph
chain and form a chain of their own in block order, every item a vector tuple (type 3, a free
flag of 0 or 1, zero padding, a vector varlena of the stored size and the index's dimensions,
finite when in use); every element's value is a code record of 40 + bits * 8 * ceil(dims / 64)
bytes with finite factors, a code sum equal to the sum of its levels (bit planes, plane j
holding bit j) and no bit set past the dimensions, whose vector locator names a vector tuple in
use, of the record's hash (FNV-1a 32-bit of the vector varlena), that no other element names.
Vector tuples in use that no element names are counted (with --crashed; a problem otherwise).
"""
import struct
import sys
from collections import deque

BLCKSZ = 8192
PAGE_ID = 0xFF90
MAGIC = 0xA953A953
QUANTIZED_MAGIC = 0xA953C0DE
VECTOR_PAGE = 1
CENTROID_PAGE = 2
VECTOR_TUPLE = 3
RECORD_HEADER = 40
INVALID_BLOCK = 0xFFFFFFFF


def fnv1a32(data):
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def finite32(raw):
    return (struct.unpack("<I", raw)[0] >> 23) & 0xFF != 0xFF


def finite16(raw):
    return (struct.unpack("<H", raw)[0] >> 10) & 0x1F != 0x1F


def parse_quantizer(meta, dims, bad):
    """The quantizer section of a quantized metapage (bytes 56 on), checked; None if unusable."""
    at = 24 + 32  # pgvector's 28 bytes of fields, maxaligned
    fmt, bits, metric = struct.unpack_from("<HBB", meta, at)
    vinsert, vsize, qdims = struct.unpack_from("<III", meta, at + 12)
    ok = True
    if fmt not in (1, 2) or bits not in (1, 2, 4, 8) or metric not in (1, 2):
        bad(f"quantizer format {fmt}, {bits} bits, metric {metric}")
        ok = False
    if qdims != dims:
        bad(f"quantizer of {qdims} dimensions in an index of {dims}")
        ok = False
    if vsize == 8 + 4 * dims:
        elem = 4
    elif vsize == 8 + 2 * dims:
        elem = 2
    else:
        bad(f"quantizer stores vectors of {vsize} bytes, for {dims} dimensions")
        ok = False
        elem = None
    lower = struct.unpack_from("<H", meta, 12)[0]
    regions_at = 24 + ((32 + 24 + 2 * dims + 3) & ~3)
    want_lower = at + 24 + 2 * dims if fmt == 1 else regions_at + 8
    if ok and lower != want_lower:
        bad(f"quantized metapage pd_lower {lower}, not {want_lower}")
    regions, first_centroid = 1, INVALID_BLOCK
    if ok and fmt == 2:
        regions, first_centroid = struct.unpack_from("<II", meta, regions_at)
        if not 1 <= regions <= 4096:
            bad(f"quantizer has {regions} regions")
            ok = False
    if ok:
        for i in range(dims):
            if not finite16(meta[at + 24 + 2 * i : at + 26 + 2 * i]):
                bad(f"quantizer centroid element {i} is not finite")
                break
    if not ok:
        return None
    return dict(bits=bits, vector_insert_page=vinsert, vector_size=vsize, elem=elem,
                code_bytes=bits * 8 * ((dims + 63) // 64), format=fmt, regions=regions,
                first_centroid=first_centroid)


def code_problem(record, q, dims):
    """What is wrong with a code record's factors and code (None when nothing)."""
    for name, at in (("norm", 12), ("scale", 16), ("error", 20), ("centroid dot", 24)):
        if not finite32(record[at : at + 4]):
            return f"code record's {name} is not finite"
    if any(record[10:12]):
        return "code record's padding is not zero"
    region = struct.unpack_from("<I", record, 36)[0]
    if region >= q["regions"]:
        return f"code record's region {region}, the index has {q['regions']}"
    code = record[RECORD_HEADER:]
    plane = len(code) // q["bits"]
    total = 0
    for j in range(q["bits"]):
        bits = int.from_bytes(code[j * plane : (j + 1) * plane], "little")
        if bits >> dims:
            return f"code plane {j} has bits set past {dims} dimensions"
        total += bin(bits).count("1") << j
    code_sum = struct.unpack_from("<I", record, 32)[0]
    if code_sum != total:
        return f"code sum {code_sum}, its levels sum to {total}"
    return None


def vector_bytes(text, elem):
    """The varlena of a vector or halfvec from its text form."""
    values = [float(x) for x in text.strip().strip("[]").split(",")] if text.strip() != "[]" else []
    fmt = "<%d%s" % (len(values), "f" if elem == 4 else "e")
    size = 8 + elem * len(values)
    return struct.pack("<IHH", size << 2, len(values), 0) + struct.pack(fmt, *values)


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
    if "--raw" in sys.argv:
        raw = open(args[0], "rb").read()
        pages = [raw[i : i + BLCKSZ] for i in range(0, len(raw), BLCKSZ)]
    else:
        pages = [bytes.fromhex(line.strip()) for line in open(args[0]) if line.strip()]
    rows = set()
    values = {}
    for line in open(args[1]):
        line = line.strip()
        if line:
            ctid, _, value = line.partition("|")
            blk, off = ctid.strip("()").split(",")
            rows.add((int(blk), int(off)))
            if value:
                values[(int(blk), int(off))] = value
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
    quantized = magic == QUANTIZED_MAGIC
    q = None
    if magic not in (MAGIC, QUANTIZED_MAGIC) or version != 1:
        bad(f"metapage magic {magic:#x} version {version}")
    if quantized:
        q = parse_quantizer(meta, dims, bad)
        if q is None:
            for p in problems:
                print("  " + p)
            print(f"FAIL: {len(problems)} problems (the quantizer section is unusable)")
            sys.exit(1)
    elif struct.unpack_from("<H", meta, 12)[0] != 52:
        bad("metapage pd_lower is not 52")

    zero_pages = set()
    if crashed:
        zero_pages = {blk for blk in range(1, len(pages)) if pages[blk] == bytes(BLCKSZ)}
    elements = {}  # tid -> dict
    neighbors = {}  # tid -> (version, slots)
    vector_pages = []  # in block order
    vectors = {}  # tid -> (free, hash, varlena bytes)
    vnext = {}  # vector page -> its next link
    centroid_pages = {}  # centroid page -> (its next link, its item)
    for blk in range(0, len(pages)):
        p = pages[blk]
        if blk in zero_pages:
            continue
        lower, upper, special = struct.unpack_from("<HHH", p, 12)
        if special != BLCKSZ - 8:
            bad(f"page {blk}: special at {special}")
            continue
        nxt, unused, page_id = struct.unpack_from("<IHH", p, special)
        is_vector_page = quantized and blk > 0 and unused == VECTOR_PAGE
        is_centroid_page = quantized and blk > 0 and unused == CENTROID_PAGE and q["format"] == 2
        if page_id != PAGE_ID or (unused != 0 and not is_vector_page and not is_centroid_page):
            bad(f"page {blk}: page id {page_id:#x}, spare half-word {unused}")
        if blk == 0:
            continue
        if is_centroid_page:
            items = (lower - 24) // 4
            word = struct.unpack_from("<I", p, 24)[0] if items else 0
            off, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
            if items != 1 or flags != 1 or off < upper or off + length > special:
                bad(f"centroid page {blk}: {items} items, the first at {off} length {length}")
                centroid_pages[blk] = (nxt, b"")
            else:
                centroid_pages[blk] = (nxt, p[off : off + length])
            continue
        if is_vector_page:
            vector_pages.append(blk)
            vnext[blk] = nxt
            size = maxalign(8 + q["vector_size"])
            for i in range((lower - 24) // 4):
                word = struct.unpack_from("<I", p, 24 + 4 * i)[0]
                off, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
                tid = (blk, i + 1)
                if flags != 1 or length != size or off < upper or off + length > special or off % 8:
                    bad(f"{tid}: vector slot flags {flags} at {off} length {length}, not {size}")
                    continue
                item = p[off : off + length]
                if item[0] != VECTOR_TUPLE or item[1] not in (0, 1) or any(item[2:8]):
                    bad(f"{tid}: vector tuple header {item[:8].hex()}")
                    continue
                value = item[8 : 8 + q["vector_size"]]
                header, vdims, vunused = struct.unpack_from("<IHH", value, 0)
                if header != q["vector_size"] << 2 or vdims != dims or vunused != 0:
                    bad(f"{tid}: vector varlena header {header:#x}, {vdims} dimensions")
                    continue
                free = item[1] == 1
                if not free:
                    e = q["elem"]
                    check = finite32 if e == 4 else finite16
                    if not all(check(value[8 + e * k : 8 + e * (k + 1)]) for k in range(dims)):
                        bad(f"{tid}: vector in use with a non-finite element")
                vectors[tid] = (free, fnv1a32(value), bytes(value))
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
                if quantized and not deleted:
                    record = item[72:]
                    want = RECORD_HEADER + q["code_bytes"]
                    size = struct.unpack_from("<I", record, 0)[0] if len(record) >= 4 else 0
                    if size & 3 or size >> 2 != want or length != maxalign(72 + want):
                        bad(f"{tid}: code record header {size:#x} in an item of {length} bytes, "
                            f"not a {want}-byte record")
                        elements[tid]["record"] = None
                        continue
                    record = record[:want]
                    problem = code_problem(record, q, dims)
                    if problem:
                        bad(f"{tid}: {problem}")
                    vblk, voff = struct.unpack_from("<IH", record, 4)
                    elements[tid]["record"] = ((vblk, voff), struct.unpack_from("<I", record, 28)[0])
                elif not deleted:
                    # pgvector's: the value varlena (4-byte header) fills the item, maxaligned.
                    size = struct.unpack_from("<I", item, 72)[0] if length >= 76 else 0
                    if size & 3 or size >> 2 < 4 or length != maxalign(72 + (size >> 2)):
                        bad(f"{tid}: value varlena header {size:#x} in an item of {length} bytes")
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
    element_pages = [blk for blk in range(1, len(pages))
                     if blk not in zero_pages and blk not in vnext and blk not in centroid_pages]
    if sorted(chain) != element_pages:
        bad(f"page chain visits {len(chain)} of {len(element_pages)} element pages")
    if insert_page not in chain:
        bad(f"insert page {insert_page} is not an element page")

    # Centroid pages: one chain from the metapage, exactly the regions' centroids, finite.
    if quantized and q["format"] == 2:
        data, blk, seen = b"", q["first_centroid"], []
        want = 2 * q["regions"] * dims
        while len(data) < want:
            if blk not in centroid_pages or blk in seen:
                bad(f"centroid chain reaches block {blk}, not a centroid page of the chain")
                break
            seen.append(blk)
            data += centroid_pages[blk][1]
            blk = centroid_pages[blk][0]
        if len(data) == want and seen and centroid_pages[seen[-1]][0] != INVALID_BLOCK:
            bad(f"the last centroid page {seen[-1]} links to {centroid_pages[seen[-1]][0]}")
        if len(data) != want or len(seen) != len(centroid_pages):
            bad(f"centroid chain holds {len(data)} bytes on {len(seen)} of "
                f"{len(centroid_pages)} centroid pages, not {want}")
        elif not all(finite16(data[i : i + 2]) for i in range(0, want, 2)):
            bad("a centroid has a non-finite element")
    elif centroid_pages:
        bad(f"{len(centroid_pages)} centroid pages in an index without regions")

    # Vector pages: a chain of their own, in block order, that the graph's never enters.
    orphans = 0
    if quantized:
        # (Two inserts into an empty index, or a crash between a first vector page and the
        # metapage's record of it, can start a second chain: a page that ends a chain early is
        # allowed with --concurrent or --crashed.)
        for i, blk in enumerate(vector_pages):
            want = vector_pages[i + 1] if i + 1 < len(vector_pages) else INVALID_BLOCK
            early_end = vnext[blk] == INVALID_BLOCK and (concurrent or crashed)
            if vnext[blk] != want and not early_end:
                bad(f"vector page {blk} links to {vnext[blk]}, not to {want}")
        if any(blk in vnext for blk in chain):
            bad("the page chain runs through vector pages")
        vi = q["vector_insert_page"]
        if vi == INVALID_BLOCK:
            if vector_pages and not crashed:
                bad("no vector insert page, but vector pages")
        elif vi not in vnext:
            bad(f"vector insert page {vi} is not a vector page")
        names = {}
        for tid, e in elements.items():
            if e["deleted"] or e.get("record") is None:
                continue
            place, hsh = e["record"]
            v = vectors.get(place)
            if v is None:
                bad(f"{tid}: its vector {place} is not a vector tuple")
                continue
            if v[0]:
                bad(f"{tid}: its vector {place} is marked free")
            if v[1] != hsh:
                bad(f"{tid}: its vector {place} has hash {v[1]:#x}, its code record {hsh:#x}")
            if place in names:
                bad(f"{tid} and {names[place]} name the same vector {place}")
            names[place] = tid
        orphans = sum(1 for t, v in vectors.items() if not v[0] and t not in names)
        if orphans and not crashed:
            bad(f"{orphans} vector tuples in use that no element names")

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

    # Each row's element holds (or, quantized, points at) exactly the row's value.
    compared = 0
    for h, text in values.items():
        tid = seen.get(h)
        if tid is None:
            continue
        e = elements[tid]
        if quantized:
            if e.get("record") is None or e["record"][0] not in vectors:
                continue
            held = vectors[e["record"][0]][2]
            want = vector_bytes(text, q["elem"])
        else:
            size = struct.unpack_from("<I", e["data"], 0)[0] >> 2
            held = bytes(e["data"][:size])
            want = vector_bytes(text, 4 if len(held) == 8 + 4 * dims else 2)
        compared += 1
        if held != want:
            bad(f"row {h}: element {tid} holds another value than the row's {text[:40]}")

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
        + (f", {len(vector_pages)} vector pages ({q['bits']}-bit codes), "
           f"{sum(1 for v in vectors.values() if not v[0])} vectors in use, "
           f"{sum(1 for v in vectors.values() if v[0])} free, {orphans} orphaned" if quantized else "")
        + (f", {compared} row values compared" if values else "")
    )
    if problems:
        for p in problems:
            print("  " + p)
        print(f"FAIL: {len(problems)} problems")
        sys.exit(1)


if __name__ == "__main__":
    main()
