#!/usr/bin/env python3
"""Seeded damage to an hnsw index file (pgvector 0.8.6's format), for tests/hnsw/corrupt_pages.sh.

    damage.py FILE KIND SEED     prints what it did

KIND is one of KINDS. The structural kinds make a change the format forbids, so the verifier
must report each one; the random kinds may land in bytes nothing reads (padding, free space).
"""
import random
import struct
import sys

BLCKSZ = 8192
KINDS = [
    "random_bytes", "run64", "noise_page",                      # random
    "meta_m0", "meta_entry", "next_self", "next_back",           # structural from here on
    "neighbor_at_meta", "neighbor_at_self", "neighbor_invalid_block",
    "level255", "varlena_too_long",
]
RANDOM_KINDS = KINDS[:3]


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


def main():
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
