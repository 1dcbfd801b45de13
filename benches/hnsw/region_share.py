#!/usr/bin/env python3
"""How much of the codes' error regions would remove on a data file: the share a quantized
build's test reads (`vector_rabitq::fit::error_share`), replayed in numpy.

    region_share.py --data FILE.f32 --dim 384 --n 100000 [--regions K] [--seed S]

Samples 64 rows per region (as the build does), runs 15 Lloyd iterations of k-means from random
samples (the build seeds with k-means++ and runs Elkan's to convergence, so its share is a
little lower), and prints the sample's mean squared distance to its nearest centroid as a share
of its mean squared distance to the table's mean. A build left to choose keeps its regions when
the share is 0.5 or less. K defaults to the build's: one per 2,000 rows, at most 256.
"""
import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="float32 rows (little-endian)")
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--n", type=int, required=True, help="table rows (the first n)")
    p.add_argument("--regions", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    k = a.regions or min(max(a.n // 2000, 1), 256)
    x = np.memmap(a.data, dtype="<f4", mode="r").reshape(-1, a.dim)[: a.n]
    rng = np.random.default_rng(a.seed)
    s = np.asarray(x[np.sort(rng.choice(a.n, min(a.n, 64 * k), replace=False))], dtype=np.float32)
    c = s[rng.choice(len(s), k, replace=False)].copy()

    def nearest():
        d = (s * s).sum(1)[:, None] - 2 * s @ c.T + (c * c).sum(1)[None, :]
        return np.maximum(d, 0)

    for _ in range(15):
        labels = nearest().argmin(1)
        for j in range(k):
            members = labels == j
            if members.any():
                c[j] = s[members].mean(0)
    mean = np.zeros(a.dim)
    for start in range(0, a.n, 100_000):
        mean += np.asarray(x[start : start + 100_000], dtype=np.float64).sum(0)
    mean /= a.n
    share = nearest().min(1).sum() / ((s - mean) ** 2).sum()
    print(f"{a.data}: {a.n} rows, {k} regions, {len(s)} samples: share {share:.4f} "
          f"({'regions kept' if share <= 0.5 else 'one centroid'})")


if __name__ == "__main__":
    main()
