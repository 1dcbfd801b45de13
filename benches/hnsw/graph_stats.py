#!/usr/bin/env python3
"""Shape and quality of an hnsw graph in pgvector 0.8.6's page format, read from the index's
data files (so that a graph built by our library and one built by pgvector's are measured by
the same code).

Usage: graph_stats.py DATAFILE [--sample N] [--metric cosine|l2] [--seed S]
  DATAFILE  the index's first segment (pg_relation_filepath; after a CHECKPOINT); the next
            segments (DATAFILE.1, .2, ...) are read too

Prints: elements and heap TIDs, the level histogram, per layer the mean out-degree and the
share of full lists, layer 0's in-degree (elements no list points at cannot be found except
as an entry), the elements reachable from the entry point over layer 0, and, with --sample,
how many of each sampled element's exact nearest neighbors (among all elements, by the index's
own values) its layer-0 list holds: the graph's quality apart from any search.
"""

import argparse
import os
import struct
import sys

import numpy as np

BLCKSZ = 8192
MAGIC = 0xA953A953


def segments(first):
    paths = [first]
    k = 1
    while os.path.exists(f"{first}.{k}"):
        paths.append(f"{first}.{k}")
        k += 1
    return paths


def read_pages(first):
    for path in segments(first):
        with open(path, "rb") as f:
            while True:
                page = f.read(BLCKSZ)
                if len(page) < BLCKSZ:
                    break
                yield page


def tid_at(b, at):
    hi, lo, off = struct.unpack_from("<HHH", b, at)
    return ((hi << 16) | lo) << 16 | off


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("datafile")
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--metric", default="cosine", choices=["cosine", "l2"])
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)

    element_tid = []  # element tid (packed) in page order
    levels = []
    heaptids = []
    neighbor_of = []  # neighbor tuple tid of each element
    values = []
    neighbor_slots = {}  # neighbor tuple tid -> list of packed tids
    meta = None
    dims = None
    for blk, page in enumerate(read_pages(a.datafile)):
        if blk == 0:
            meta = struct.unpack_from("<IIIHHIHhI", page, 24)
            if meta[0] != MAGIC:
                raise SystemExit(f"metapage magic {meta[0]:#x}: not pgvector's unquantized format")
            dims = meta[2]
            continue
        lower = struct.unpack_from("<H", page, 12)[0]
        for i in range((lower - 24) // 4):
            word = struct.unpack_from("<I", page, 24 + 4 * i)[0]
            off, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
            if flags != 1:
                continue
            kind = page[off]
            tid = blk << 16 | (i + 1)
            if kind == 1:
                if page[off + 2]:  # deleted
                    continue
                element_tid.append(tid)
                levels.append(page[off + 1])
                n = sum(1 for k in range(10) if struct.unpack_from("<H", page, off + 4 + 6 * k + 4)[0])
                heaptids.append(n)
                neighbor_of.append(tid_at(page, off + 64))
                values.append(np.frombuffer(page, dtype="<f4", count=dims, offset=off + 72 + 8))
            elif kind == 2:
                count = struct.unpack_from("<H", page, off + 2)[0]
                neighbor_slots[tid] = [tid_at(page, off + 4 + 6 * k) for k in range(count)]
    m = meta[3]
    entry = meta[5] << 16 | meta[6]
    n = len(element_tid)
    index_of = {t: i for i, t in enumerate(element_tid)}
    levels = np.array(levels)
    print(f"elements {n}, heap TIDs {sum(heaptids)}, m {m}, ef_construction {meta[4]}, "
          f"entry level {meta[7]}")
    hist = np.bincount(levels)
    print("levels: " + ", ".join(f"{lv}: {c}" for lv, c in enumerate(hist) if c))

    layer_lists = {}  # layer -> list of arrays (element index -> neighbor indexes)
    invalid = 0
    for layer in range(int(levels.max()) + 1):
        cap = 2 * m if layer == 0 else m
        lists = []
        full = 0
        members = 0
        for i in range(n):
            lv = levels[i]
            if lv < layer:
                lists.append(None)
                continue
            slots = neighbor_slots[neighbor_of[i]]
            start = (lv - layer) * m
            ids = []
            for t in slots[start:start + cap]:
                if t & 0xFFFF == 0:
                    break
                j = index_of.get(t)
                if j is None:
                    invalid += 1
                else:
                    ids.append(j)
            lists.append(np.array(ids, dtype=np.int64))
            members += 1
            full += len(ids) == cap
        degs = [len(x) for x in lists if x is not None]
        layer_lists[layer] = lists
        print(f"layer {layer}: {members} elements, mean out-degree {np.mean(degs):.2f} of {cap}, "
              f"full {full / members:.3f}")
    if invalid:
        print(f"links to no element: {invalid}")

    l0 = layer_lists[0]
    indeg = np.zeros(n, dtype=np.int64)
    for x in l0:
        indeg[x] += 1
    print(f"layer 0 in-degree: mean {indeg.mean():.2f}, zero {int((indeg == 0).sum())}, "
          f"<= 2 {int((indeg <= 2).sum())}, max {int(indeg.max())}")
    seen = np.zeros(n, dtype=bool)
    start = index_of[entry]
    seen[start] = True
    frontier = [start]
    while frontier:
        nxt = []
        for i in frontier:
            for j in l0[i]:
                if not seen[j]:
                    seen[j] = True
                    nxt.append(j)
        frontier = nxt
    print(f"reachable over layer 0 from the entry point: {int(seen.sum())} of {n} "
          f"({n - int(seen.sum())} not)")

    if a.sample:
        vals = np.stack(values).astype(np.float32)
        if a.metric == "cosine":
            vals /= np.linalg.norm(vals, axis=1, keepdims=True)
        rng = np.random.default_rng(a.seed)
        pick = rng.choice(n, size=min(a.sample, n), replace=False)
        within = {1: 0, 10: 0, 2 * m: 0}
        in_true = 0
        listed = 0
        for chunk in np.array_split(pick, max(1, len(pick) // 200)):
            q = vals[chunk]
            if a.metric == "cosine":
                d = -q @ vals.T
            else:
                d = (vals ** 2).sum(1)[None, :] - 2 * q @ vals.T
            d[np.arange(len(chunk)), chunk] = np.inf
            top = np.argpartition(d, 2 * m, axis=1)[:, :2 * m]
            for row, i in enumerate(chunk):
                order = top[row][np.argsort(d[row, top[row]])]
                mine = set(l0[i].tolist())
                for k in within:
                    within[k] += len(mine & set(order[:k].tolist()))
                in_true += len(mine & set(order.tolist()))
                listed += len(mine)
        s = len(pick)
        print(f"sampled {s} elements: their layer-0 lists hold the exact 1-NN {within[1] / s:.3f}, "
              f"of the 10-NN {within[10] / (10 * s):.3f}, of the {2 * m}-NN "
              f"{within[2 * m] / (2 * m * s):.3f}; share of list entries among the exact "
              f"{2 * m}-NN {in_true / max(listed, 1):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
