#!/usr/bin/env python3
"""Seeded damage to an hnsw or ivfflat index file (pgvector 0.8.6's formats, and our quantized
hnsw format: crates/formats/src/hnsw_codes.rs), for tests/corrupt_pages.sh.

    damage.py FILE KIND SEED       prints what it did
    damage.py --kinds AM           prints the kinds for AM (hnsw, hnsw-quantized, ivfflat),
                                   random ones first
    damage.py --random-kinds AM    prints the random kinds of AM
    damage.py --known-gaps AM      prints the structural kinds the verifier is known to miss

The structural kinds make a change the format forbids, so the verifier must report each one;
the random kinds may land in bytes nothing reads (padding, free space) or that no check can
tell from good ones: a quantized index's code bits and factors (they only steer the search,
which reranks by exact distance), its centroid or rotation seed.
"""
import random
import struct
import sys

BLCKSZ = 8192
RANDOM_KINDS = ["random_bytes", "run64", "noise_page"]
QUANTIZED_RANDOM_KINDS = ["q_meta_bytes", "q_vector_page_bytes", "q_code_bits", "q_factors"]
HNSW_GRAPH_KINDS = [
    "meta_m0", "meta_entry", "next_self", "next_back", "next_skip",
    "neighbor_at_meta", "neighbor_at_self", "neighbor_invalid_block",
    "level255", "varlena_too_long", "element_neighbor_tid",
]
QUANTIZED_KINDS = [
    "q_meta_magic_pgvector", "q_meta_bits", "q_meta_metric", "q_meta_dims", "q_meta_vector_size",
    "q_meta_vector_insert_page", "q_vector_page_unmark", "q_graph_page_mark", "q_vector_next",
    "q_vector_type", "q_vector_length", "q_vector_dims", "q_vector_free", "q_vector_value",
    "q_record_hash", "q_record_length", "q_record_vector_graph", "q_record_vector_other",
    "q_record_vector_bad", "q_meta_vector_insert_graph", "q_graph_next_vector",
    "q_centroid_unmark", "q_meta_regions", "q_meta_centroid_page", "q_record_region",
    "q_centroid_next",
]
# Structural kinds the verifier is known to miss (tests/corrupt_pages.sh reports them as known
# gaps instead of failing; see its DAMAGE_KNOWN_GAPS).
KNOWN_GAPS = {
    "hnsw": ["next_skip"],
    "hnsw-quantized": ["next_skip"],
    "ivfflat": [],
}
RANDOM = {
    "hnsw": RANDOM_KINDS,
    "hnsw-quantized": RANDOM_KINDS + QUANTIZED_RANDOM_KINDS,
    "ivfflat": RANDOM_KINDS,
}
KINDS = {
    "hnsw": RANDOM_KINDS + HNSW_GRAPH_KINDS,
    "hnsw-quantized": RANDOM_KINDS + QUANTIZED_RANDOM_KINDS + HNSW_GRAPH_KINDS + QUANTIZED_KINDS,
    "ivfflat": RANDOM_KINDS + [
        "meta_lists", "list_start_meta", "list_start_past_end", "entry_next_self",
        "entry_next_back", "entry_next_list_page", "entry_size", "entry_dims",
    ],
}


def items(page):
    """(offset number, byte offset, length) of every normal line pointer."""
    lower = struct.unpack_from("<H", page, 12)[0]
    out = []
    for i in range(max(0, (lower - 24) // 4)):
        word = struct.unpack_from("<I", page, 24 + 4 * i)[0]
        off, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
        if flags == 1 and length > 0 and off + length <= BLCKSZ:
            out.append((i + 1, off, length))
    return out


def tuples(pages, kind):
    """(block, offset number, byte offset, length) of every tuple of type `kind` (1 element, 2 neighbor)."""
    return [(b, o, off, n) for b in range(1, len(pages)) for (o, off, n) in items(pages[b])
            if pages[b][off] == kind]


def next_of(page):
    return struct.unpack_from("<I", page, BLCKSZ - 8)[0]


def set_next(page, block):
    struct.pack_into("<I", page, BLCKSZ - 8, block)


def spare(page):
    """The special space's spare half-word: 1 on a quantized index's vector pages."""
    return struct.unpack_from("<H", page, BLCKSZ - 4)[0]


def graph_chain(pages):
    """The graph's page chain from block 1 (stops at a loop or a block past the end)."""
    chain, b = [], 1
    while b != 0xFFFFFFFF and b < len(pages) and b not in chain:
        chain.append(b)
        b = next_of(pages[b])
    return chain


def slot_vector(pages, block, offset, dims):
    """The floats of the vector tuple at (block, offset), None if there is none."""
    if block >= len(pages):
        return None
    for (o, off, _) in items(pages[block]):
        if o == offset:
            return struct.unpack_from(f"<{dims}f", pages[block], off + 16)
    return None


def near_query(pages, elements, dims, heap_tid=(0, 17), k=10):
    """The k live elements of a quantized index nearest the vector of the element indexing
    heap_tid (by their vector tuples), or [] if there is no such element."""
    vectors = {}
    query = None
    for e in elements:
        b, o, off, _ = e
        vb, vo = struct.unpack_from("<IH", pages[b], off + 72 + 4)
        v = slot_vector(pages, vb, vo, dims)
        if v is None:
            continue
        vectors[e] = v
        for i in range(10):
            hi, lo, no = struct.unpack_from("<HHH", pages[b], off + 4 + 6 * i)
            if ((hi << 16) | lo, no) == heap_tid:
                query = v
    if query is None:
        return []
    return sorted(vectors, key=lambda e: sum((x - y) ** 2 for x, y in zip(vectors[e], query)))[:k]


def damage_quantized(kind, pages, rng):
    """A quantized index's damage: metapage's quantizer section, vector pages, code records."""
    n = len(pages)
    meta = pages[0]
    dims = struct.unpack_from("<I", meta, 24 + 8)[0]
    q = 24 + 32  # the quantizer section
    bits = meta[q + 2]
    vsize = struct.unpack_from("<I", meta, q + 16)[0]
    code_bytes = bits * 8 * ((dims + 63) // 64)
    vector_pages = [b for b in range(1, n) if spare(pages[b]) == 1]
    centroid_pages = [b for b in range(1, n) if spare(pages[b]) == 2]
    graph = [b for b in range(1, n) if spare(pages[b]) == 0]
    # Format 2: the region count and first centroid page follow the centroid.
    regions_at = 24 + ((32 + 24 + 2 * dims + 3) & ~3)
    regions = struct.unpack_from("<I", meta, regions_at)[0] if struct.unpack_from("<H", meta, q)[0] == 2 else 1
    elements = [e for e in tuples(pages, 1) if pages[e[0]][e[2] + 2] == 0]
    slots = [(b, o, off) for b in vector_pages for (o, off, _) in items(pages[b])]
    # The vector slot each live element names.
    named = {}
    for (b, o, off, _) in elements:
        vb, vo = struct.unpack_from("<IH", pages[b], off + 72 + 4)
        named[(vb, vo)] = (b, o, off)
    in_use = [(b, o, off) for (b, o, off) in slots if (b, o) in named]
    # Most tuple-level damage goes to the 10 elements nearest the query of corrupt_pages.sh
    # (the row at heap TID (0,17)), where a search's answer sees it.
    tuple_level = kind.startswith(("q_vector_", "q_record_")) or kind in ("q_code_bits", "q_factors")
    near = near_query(pages, elements, dims) if tuple_level and kind != "q_vector_next" else []
    if near and rng.random() < 0.75:
        elements = near
        mine = {struct.unpack_from("<IH", pages[b], off + 72 + 4) for (b, o, off, _) in near}
        in_use = [s for s in in_use if (s[0], s[1]) in mine] or in_use

    if kind == "q_meta_bytes":
        lower = struct.unpack_from("<H", meta, 12)[0]
        for _ in range(4):
            meta[rng.randrange(q + 4, lower)] = rng.randrange(256)
        return kind
    if kind == "q_vector_page_bytes":
        b = rng.choice(vector_pages)
        upper = struct.unpack_from("<H", pages[b], 14)[0]
        for _ in range(16):
            pages[b][rng.randrange(upper, BLCKSZ - 8)] = rng.randrange(256)
        return f"{kind} block {b}"
    if kind == "q_code_bits":
        for _ in range(8):
            b, o, off, _ = rng.choice(elements)
            at = off + 72 + 40 + rng.randrange(code_bytes)
            pages[b][at] ^= 1 << rng.randrange(8)
        return kind
    if kind == "q_factors":
        b, o, off, _ = rng.choice(elements)
        field = rng.choice([12, 16, 20, 24, 32])
        at = off + 72 + field
        if field == 32:
            struct.pack_into("<I", pages[b], at, struct.unpack_from("<I", pages[b], at)[0] + rng.randrange(1, 50))
        else:
            value = struct.unpack_from("<f", pages[b], at)[0]
            struct.pack_into("<f", pages[b], at, value * rng.choice([0.0, 0.5, 2.0, -1.0]) + rng.random())
        return f"{kind} element ({b},{o}) byte {field}"
    if kind == "q_meta_magic_pgvector":
        struct.pack_into("<I", meta, 24, 0xA953A953)
    elif kind == "q_meta_bits":
        meta[q + 2] = rng.choice([0, 3, 5, 6, 7, 9, 16, 255])
    elif kind == "q_meta_metric":
        meta[q + 3] = rng.choice([0, 3, 4, 128, 255])
    elif kind == "q_meta_dims":
        struct.pack_into("<I", meta, q + 20, rng.choice([0, dims - 1, dims + 1, dims * 2]))
    elif kind == "q_meta_vector_size":
        struct.pack_into("<I", meta, q + 16, rng.choice([vsize - 4, vsize + 4, 8 + 2 * dims, 0]))
    elif kind == "q_meta_vector_insert_page":
        struct.pack_into("<I", meta, q + 12, rng.choice([0, n, n + rng.randrange(1, 1000)]))
    elif kind == "q_meta_vector_insert_graph":
        # The vector insert page at a graph page (inserts would add vector tuples there).
        b = rng.choice(graph)
        struct.pack_into("<I", meta, q + 12, b)
        return f"{kind} -> {b}"
    elif kind == "q_graph_next_vector":
        # A graph page links into the vector pages (inserts would add elements there).
        chain = graph_chain(pages)
        b = rng.choice(chain)
        target = rng.choice(vector_pages)
        set_next(pages[b], target)
        return f"{kind} graph block {b} -> {target}"
    elif kind == "q_centroid_unmark":
        b = rng.choice(centroid_pages)
        struct.pack_into("<H", pages[b], BLCKSZ - 4, 0)
        return f"{kind} block {b}"
    elif kind == "q_centroid_next":
        # The centroid chain's last page links on (to a graph or vector page).
        b = centroid_pages[-1]
        target = rng.choice([rng.choice(graph), rng.choice(vector_pages), b])
        set_next(pages[b], target)
        return f"{kind} block {b} -> {target}"
    elif kind == "q_meta_regions":
        struct.pack_into("<I", meta, regions_at, rng.choice([0, regions + 1, regions + 7, 5000]))
    elif kind == "q_meta_centroid_page":
        target = rng.choice([rng.choice(graph), rng.choice(vector_pages), n + rng.randrange(0, 100)])
        struct.pack_into("<I", meta, regions_at + 4, target)
        return f"{kind} -> {target}"
    elif kind == "q_vector_page_unmark":
        b = rng.choice(vector_pages)
        struct.pack_into("<H", pages[b], BLCKSZ - 4, 0)
        return f"{kind} block {b}"
    elif kind == "q_graph_page_mark":
        b = rng.choice(graph)
        struct.pack_into("<H", pages[b], BLCKSZ - 4, 1)
        return f"{kind} block {b}"
    elif kind == "q_vector_next":
        b = rng.choice(vector_pages)
        target = rng.choice([b, 0, rng.choice(graph), vector_pages[0]] if b != vector_pages[0] else [b, 0, rng.choice(graph)])
        set_next(pages[b], target)
        return f"{kind} block {b} -> {target}"
    else:
        # Tuple-level kinds.
        if kind in ("q_vector_type", "q_vector_length"):
            b, o, off = rng.choice(slots)
        elif kind.startswith("q_vector_"):
            b, o, off = rng.choice(in_use)
        if kind == "q_vector_type":
            pages[b][off] = rng.choice([0, 1, 2, 4, 255])
        elif kind == "q_vector_length":
            new = rng.choice([vsize - 4, vsize + 4, vsize + 4096, 0])
            struct.pack_into("<I", pages[b], off + 8, new << 2)
        elif kind == "q_vector_dims":
            struct.pack_into("<H", pages[b], off + 12, rng.choice([0, dims - 1, dims + 1]))
        elif kind == "q_vector_free":
            pages[b][off + 1] = 1
        elif kind == "q_vector_value":
            k = rng.randrange(dims)
            value = struct.unpack_from("<f", pages[b], off + 16 + 4 * k)[0]
            struct.pack_into("<f", pages[b], off + 16 + 4 * k, value + rng.choice([-1.0, 0.5, 1.0]))
        else:
            b, o, off, _ = rng.choice(elements)
            rec = off + 72
            if kind == "q_record_hash":
                h = struct.unpack_from("<I", pages[b], rec + 28)[0]
                struct.pack_into("<I", pages[b], rec + 28, h ^ (1 << rng.randrange(32)))
            elif kind == "q_record_region":
                struct.pack_into("<I", pages[b], rec + 36, regions + rng.randrange(0, 1000))
            elif kind == "q_record_length":
                new = rng.choice([40 + code_bytes - 8, 40 + code_bytes + 8, 40, 36])
                struct.pack_into("<I", pages[b], rec, new << 2)
            elif kind == "q_record_vector_graph":
                gb, go, _, _ = rng.choice(elements)
                struct.pack_into("<IH", pages[b], rec + 4, gb, go)
            elif kind == "q_record_vector_other":
                mine = struct.unpack_from("<IH", pages[b], rec + 4)
                ob, oo, _ = rng.choice([s for s in in_use if (s[0], s[1]) != mine])
                struct.pack_into("<IH", pages[b], rec + 4, ob, oo)
            elif kind == "q_record_vector_bad":
                vb = rng.choice(vector_pages)
                place = rng.choice([(0, 1), (n + rng.randrange(0, 100), 1), (vb, 0),
                                    (vb, len(items(pages[vb])) + rng.randrange(1, 50))])
                struct.pack_into("<IH", pages[b], rec + 4, *place)
            else:
                sys.exit(f"unknown kind {kind}")
            return f"{kind} element ({b},{o})"
        return f"{kind} vector ({b},{o})"
    return kind


def ivfflat_lists(pages):
    """(block, byte offset) of every list tuple, along the list-page chain from block 1."""
    out, b = [], 1
    while b != 0xFFFFFFFF and b < len(pages):
        out += [(b, off) for (_, off, _) in items(pages[b])]
        b = next_of(pages[b])
    return out


def ivfflat_chain(pages, start):
    chain, b = [], start
    while b != 0xFFFFFFFF and b < len(pages) and b not in chain:
        chain.append(b)
        b = next_of(pages[b])
    return chain


def damage_ivfflat(kind, pages, rng):
    n = len(pages)
    lists = ivfflat_lists(pages)
    lb, loff = rng.choice(lists)
    start = struct.unpack_from("<I", pages[lb], loff)[0]
    chain = ivfflat_chain(pages, start)
    if kind == "meta_lists":
        struct.pack_into("<H", pages[0], 24 + 10, len(lists) + rng.randrange(1, 100))
    elif kind == "list_start_meta":
        struct.pack_into("<I", pages[lb], loff, 0)
    elif kind == "list_start_past_end":
        struct.pack_into("<I", pages[lb], loff, n + rng.randrange(0, 1000))
    elif kind == "entry_next_self":
        b = rng.choice(chain)
        set_next(pages[b], b)
    elif kind == "entry_next_back":
        set_next(pages[chain[-1]], chain[0])
    elif kind == "entry_next_list_page":
        set_next(pages[rng.choice(chain)], 1)
    elif kind in ("entry_size", "entry_dims"):
        with_entries = [b for b in chain if items(pages[b])]
        if not with_entries:
            # An empty list: its start page gets a neighbor list's page instead (two chains).
            other = next(s for (b, o) in lists if (s := struct.unpack_from("<I", pages[b], o)[0]) != start)
            struct.pack_into("<I", pages[lb], loff, other)
            return f"list ({lb}) start -> {other}"
        b = rng.choice(with_entries)
        o, off, _ = rng.choice(items(pages[b]))
        if kind == "entry_size":
            info = struct.unpack_from("<H", pages[b], off + 6)[0]
            struct.pack_into("<H", pages[b], off + 6, (info & 0xE000) | 0x1FFF)
        else:
            # The dimension count, after a 1- or 4-byte varlena header.
            at = off + 8 + (1 if pages[b][off + 8] & 1 else 4)
            dim = struct.unpack_from("<H", pages[b], at)[0]
            struct.pack_into("<H", pages[b], at, dim + 1)
        return f"{kind} ({b},{o})"
    else:
        sys.exit(f"unknown kind {kind}")
    return f"{kind} list ({lb})"


def main():
    if sys.argv[1] == "--kinds":
        print(" ".join(KINDS[sys.argv[2]]))
        return
    if sys.argv[1] == "--random-kinds":
        print(" ".join(RANDOM[sys.argv[2]]))
        return
    if sys.argv[1] == "--known-gaps":
        print(" ".join(KNOWN_GAPS[sys.argv[2]]))
        return
    path, kind, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    data = bytearray(open(path, "rb").read())
    pages = [data[i:i + BLCKSZ] for i in range(0, len(data), BLCKSZ)]
    n = len(pages)
    elements, neighbors = tuples(pages, 1), tuples(pages, 2)
    what = kind
    if kind == "random_bytes":
        b = rng.randrange(n)
        upper = struct.unpack_from("<H", pages[b], 14)[0] or 24
        for _ in range(16):
            pages[b][rng.randrange(min(upper, BLCKSZ - 9), BLCKSZ - 8)] = rng.randrange(256)
        what += f" block {b}"
    elif kind == "run64":
        b = rng.randrange(n)
        at = rng.randrange(24, BLCKSZ - 64)
        pages[b][at:at + 64] = bytes(rng.randrange(256) for _ in range(64))
        what += f" block {b} at {at}"
    elif kind == "noise_page":
        b = rng.randrange(n)
        pages[b][:] = bytes(rng.randrange(256) for _ in range(BLCKSZ))
        what += f" block {b}"
    elif kind in KINDS["ivfflat"]:
        what = damage_ivfflat(kind, pages, rng)
    elif kind.startswith("q_"):
        what = damage_quantized(kind, pages, rng)
    elif kind == "meta_m0":
        struct.pack_into("<H", pages[0], 24 + 12, 0)
    elif kind == "meta_entry":
        struct.pack_into("<I", pages[0], 24 + 16, n + rng.randrange(1, 1000))
    elif kind == "next_skip":
        # A graph page links past the next one: the pages between are off the chain (vacuum
        # never visits them).
        chain = graph_chain(pages)
        i = rng.randrange(len(chain) - 2)
        j = rng.randrange(i + 2, len(chain))
        set_next(pages[chain[i]], chain[j])
        what += f" graph block {chain[i]} -> {chain[j]} ({j - i - 1} pages off the chain)"
    elif kind in ("next_self", "next_back") and any(spare(p) == 1 for p in pages[1:]):
        # A quantized index: graph pages only (vector pages have their own kind).
        chain = graph_chain(pages)
        b = rng.choice(chain) if kind == "next_self" else chain[-1]
        target = b if kind == "next_self" else rng.choice(chain[:-1])
        set_next(pages[b], target)
        what += f" graph block {b} -> {target}"
    elif kind in ("next_self", "next_back"):
        b = rng.randrange(1, n) if kind == "next_self" else n - 1
        target = b if kind == "next_self" else rng.randrange(1, n - 1)
        struct.pack_into("<I", pages[b], BLCKSZ - 8, target)
        what += f" block {b} -> {target}"
    elif kind in ("neighbor_at_meta", "neighbor_invalid_block"):
        b, o, off, length = rng.choice(neighbors)
        count = struct.unpack_from("<H", pages[b], off + 2)[0]
        slot = rng.randrange(count)
        block = 0 if kind == "neighbor_at_meta" else 0xFFFFFFFF
        struct.pack_into("<HHH", pages[b], off + 4 + 6 * slot, block >> 16, block & 0xFFFF, 1)
        what += f" ({b},{o}) slot {slot}"
    elif kind == "neighbor_at_self":
        b, o, off, _ = rng.choice(elements)
        hi, lo, no = struct.unpack_from("<HHH", pages[b], off + 64)
        nb = (hi << 16) | lo
        noff = next(x for (oo, x, _) in items(pages[nb]) if oo == no)
        struct.pack_into("<HHH", pages[nb], noff + 4, b >> 16, b & 0xFFFF, o)
        what += f" element ({b},{o})"
    elif kind == "element_neighbor_tid":
        # The element's neighbor TID at another element (of the same page when there is one).
        b, o, off, _ = rng.choice(elements)
        others = [e for e in elements if e[0] == b and e[1] != o] or [e for e in elements if e[:2] != (b, o)]
        ob, oo, _, _ = rng.choice(others)
        struct.pack_into("<HHH", pages[b], off + 64, ob >> 16, ob & 0xFFFF, oo)
        what += f" element ({b},{o}) -> ({ob},{oo})"
    elif kind == "level255":
        b, o, off, _ = rng.choice(elements)
        pages[b][off + 1] = 255
        what += f" element ({b},{o})"
    elif kind == "varlena_too_long":
        b, o, off, _ = rng.choice([e for e in elements if pages[e[0]][e[2] + 2] == 0])
        struct.pack_into("<I", pages[b], off + 72, (BLCKSZ * 2) << 2)
        what += f" element ({b},{o})"
    else:
        sys.exit(f"unknown kind {kind}")
    open(path, "wb").write(b"".join(pages))
    print(what)


if __name__ == "__main__":
    main()
