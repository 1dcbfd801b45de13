#!/usr/bin/env python3
"""Seeded damage to an hnsw or ivfflat index file (pgvector 0.8.6's formats), for
tests/corrupt_pages.sh.

    damage.py FILE KIND SEED     prints what it did
    damage.py --kinds AM         prints the kinds for AM (hnsw, ivfflat), random ones first

The structural kinds make a change the format forbids, so the verifier must report each one;
the random kinds may land in bytes nothing reads (padding, free space).
"""
import random
import struct
import sys

BLCKSZ = 8192
RANDOM_KINDS = ["random_bytes", "run64", "noise_page"]
KINDS = {
    "hnsw": RANDOM_KINDS + [
        "meta_m0", "meta_entry", "next_self", "next_back",
        "neighbor_at_meta", "neighbor_at_self", "neighbor_invalid_block",
        "level255", "varlena_too_long", "element_neighbor_tid",
    ],
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
    elif kind == "meta_m0":
        struct.pack_into("<H", pages[0], 24 + 12, 0)
    elif kind == "meta_entry":
        struct.pack_into("<I", pages[0], 24 + 16, n + rng.randrange(1, 1000))
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
