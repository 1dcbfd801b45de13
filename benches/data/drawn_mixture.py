#!/usr/bin/env python3
"""Benchmark vectors "drawn from the real set": a mixture model fitted to real sentence
embeddings, sampled at any size (1M, 10M rows), with exact ground truth.

  fit    Spherical k-means (cosine) on the first --fit-rows rows of a real .f32 file (rows
         from 100,000 on are queries for other harnesses, so they are never fitted). Per
         cluster: its weight (share of rows), mean, the top --rank principal directions of
         its residuals (rows minus mean) with their variances, and one isotropic variance for
         the remaining dimensions. Saved as an .npz.
  draw   Samples --rows rows and --queries queries (another random stream) from the model:
         pick a cluster by weight, x = mean + U diag(sqrt(var)) z + sqrt(iso) w with z, w
         standard normal, then x / |x|. Writes OUT/drawn-<dim>-<N>.f32 and
         OUT/drawn-<dim>-<N>.queries.f32. --shrink NU (0: off) first moves each cluster's
         covariance toward isotropic by min(1, NU / its fitted rows), total variance kept (a
         small cluster's directions are noise: its draws sat too close together). --twin-share P
         (0: off) makes a share P of rows and queries twins: deviation = sqrt(1 - J^2) a + J d,
         a one fixed draw per cluster (stream 2 of --seed), d the row's own, J --twin-jitter
         (0.3); the same Gaussian, but a cluster's twins lie near each other (near-duplicates).
         Tried at 100k: --shrink 2 --twin-share 0.2 --twin-jitter 0.2 on 5,000 centroids, rank 8.
  truth  Exact top --k (100) neighbours of each query by cosine distance, brute force:
         OUT/drawn-<dim>-<N>.truth100.i32 (row indices, nearest first, ties to the lower
         index) and OUT/drawn-<dim>-<N>.truth100.f32 (the distances, 1 - dot).
  check  Is the draw as hard as the real data? Compares nearest and 10th-nearest neighbour
         distances of real queries among real rows with those of drawn queries among drawn
         rows (same counts): quartiles and a two-sample Kolmogorov-Smirnov test.

All files are raw little-endian float32 (int32 for indices), row after row, no header.

    python3 benches/data/drawn_mixture.py fit --source DIR/sentences-minilm-384.f32 --dim 384 --model DIR/mixture-384.npz
    python3 benches/data/drawn_mixture.py draw --model DIR/mixture-384.npz --rows 10000000 --out DIR
    python3 benches/data/drawn_mixture.py truth --out DIR --dim 384 --rows 10000000
    python3 benches/data/drawn_mixture.py check --source DIR/sentences-minilm-384.f32 --dim 384 --drawn DIR/drawn-384-10000000.f32

draw and truth work in chunks of --chunk rows (bounded memory) and, stopped, go on from their
.part files when run again. A finished file of the right size is kept (delete it, and the
truth files made from it, to draw again). Output depends only on the model, --seed, --chunk
and the draw options: each chunk has its own random stream. check compares --sample rows (100,000, or
fewer if a file is smaller); its real queries are the rows from --sample on when they exist,
else the file's last rows. Needs numpy; fit and check also scipy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

RESERVED_QUERIES_FROM = 100_000  # real rows from here on are queries elsewhere
ROWS_STREAM, QUERIES_STREAM, TWINS_STREAM = 0, 1, 2


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Progress:
    """Rows done, elapsed time and ETA on stderr, at most every `every` seconds."""

    def __init__(self, label: str, total: int, done: int, every: float = 30.0) -> None:
        self.label, self.total, self.first, self.every = label, total, done, every
        self.start = self.last = time.monotonic()

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        elapsed = now - self.start
        rate = (done - self.first) / elapsed if elapsed > 0 else 0.0
        eta = f"{(self.total - done) / rate:.0f} s" if rate > 0 else "?"
        log(f"{self.label}: {done:,}/{self.total:,} rows, {elapsed:.0f} s elapsed, ETA {eta}")


# ----------------------------------------------------------------------------- files


def row_count(path: Path, dim: int) -> int:
    size = path.stat().st_size
    if size % (4 * dim):
        sys.exit(f"{path}: {size} bytes is not a whole number of {dim}-d float32 rows")
    return size // (4 * dim)


def read_rows(path: Path, dim: int, start: int, count: int) -> np.ndarray:
    with open(path, "rb") as f:
        f.seek(start * dim * 4)
        data = np.fromfile(f, dtype="<f4", count=count * dim)
    if data.size != count * dim:
        sys.exit(f"{path}: wanted rows {start}..{start + count - 1}, the file is shorter")
    return data.reshape(count, dim).astype(np.float32, copy=False)


def unit(x: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))  # no chunk-sized temporary, unlike norm()
    x /= np.maximum(norms, np.float32(1e-30))[:, None]
    return x


def done_already(path: Path, size: int) -> bool:
    if path.exists() and path.stat().st_size == size:
        log(f"{path} exists with the right size, kept")
        return True
    return False


def finish(part: Path, path: Path) -> None:
    with open(part, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(part, path)


# ----------------------------------------------------------------------------- fit


def kmeans_pp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeds under cosine distance: each next seed is a row drawn with probability
    proportional to its squared distance to the nearest seed so far."""
    centroids = np.empty((k, x.shape[1]), np.float32)
    centroids[0] = x[rng.integers(len(x))]
    dist = 1.0 - x @ centroids[0]
    for i in range(1, k):
        cdf = np.cumsum(np.maximum(dist, 0).astype(np.float64) ** 2)
        j = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(x) - 1)
        centroids[i] = x[j]
        np.minimum(dist, 1.0 - x @ x[j], out=dist)
    return centroids


def assign(x: np.ndarray, centroids: np.ndarray, chunk: int = 8192) -> tuple[np.ndarray, float]:
    """Nearest centroid by cosine of every row (in chunks: the similarity matrix stays small)
    and the mean similarity to it."""
    labels = np.empty(len(x), np.int64)
    total = 0.0
    for a in range(0, len(x), chunk):
        sims = x[a:a + chunk] @ centroids.T
        labels[a:a + chunk] = sims.argmax(axis=1)
        total += float(sims.max(axis=1).sum(dtype=np.float64))
    return labels, total / len(x)


def spherical_kmeans(x: np.ndarray, k: int, iters: int, seed: int) -> np.ndarray:
    from scipy import sparse

    centroids = kmeans_pp(x, k, np.random.default_rng(seed))
    labels = np.full(len(x), -1, np.int64)
    for it in range(iters):
        new, similarity = assign(x, centroids)
        moved = int(np.count_nonzero(new != labels))
        log(f"k-means iteration {it + 1}/{iters}: mean cosine to centroid {similarity:.4f}, "
            f"{moved:,} rows moved")
        labels = new
        if moved == 0:
            break
        # Sums of each cluster's rows as one sparse one-hot product (np.add.at is slow).
        onehot = sparse.csr_matrix((np.ones(len(x), np.float32), (labels, np.arange(len(x)))),
                                   shape=(k, len(x)))
        sums = np.asarray(onehot @ x)
        norms = np.linalg.norm(sums, axis=1)
        filled = norms > 0  # an empty cluster keeps its old centroid
        centroids[filled] = sums[filled] / norms[filled, None]
    return labels


def cluster_stats(x: np.ndarray, labels: np.ndarray, rank: int) -> dict[str, np.ndarray]:
    n, dim = x.shape
    counts = np.bincount(labels)
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    kept = np.flatnonzero(counts)  # empty clusters are dropped
    means = np.zeros((len(kept), dim), np.float32)
    axes = np.zeros((len(kept), rank, dim), np.float32)
    variances = np.zeros((len(kept), rank), np.float32)
    iso = np.zeros(len(kept), np.float64)
    spread = np.zeros(len(kept), np.float64)  # total residual variance
    for out, c in enumerate(kept):
        rows = x[order[bounds[c]:bounds[c + 1]]].astype(np.float64)
        mean = rows.mean(axis=0)
        resid = rows - mean
        spread[out] = float((resid ** 2).sum()) / len(rows)
        _, s, vt = np.linalg.svd(resid, full_matrices=False)
        r = min(rank, len(s))  # a small cluster has fewer directions than --rank
        eig = s[:r] ** 2 / len(rows)
        means[out], axes[out, :r], variances[out, :r] = mean, vt[:r], eig
        iso[out] = max(spread[out] - eig.sum(), 0.0) / (dim - r)
    # A lone row has no spread and would be drawn as exact duplicates of itself: give it a
    # typical cluster's total variance, all isotropic.
    lone = counts[kept] == 1
    if lone.any() and (~lone).any():
        iso[lone] = np.median(spread[~lone]) / dim
    return {"weights": counts[kept] / n, "means": means, "axes": axes,
            "variances": variances, "iso": iso.astype(np.float32), "counts": counts[kept],
            "spread": spread}


def cmd_fit(a: argparse.Namespace) -> None:
    """Fits the mixture model to real rows."""
    if a.fit_rows > RESERVED_QUERIES_FROM:
        sys.exit(f"--fit-rows {a.fit_rows}: rows from {RESERVED_QUERIES_FROM} on are queries")
    if not 0 < a.rank < a.dim:
        sys.exit("--rank must be between 1 and --dim - 1")
    n = min(a.fit_rows, row_count(a.source, a.dim))
    x = unit(read_rows(a.source, a.dim, 0, n))
    log(f"fitting {a.centroids} clusters to rows 0..{n - 1} of {a.source}")
    t0 = time.monotonic()
    labels = spherical_kmeans(x, a.centroids, a.iters, a.seed)
    m = cluster_stats(x, labels, a.rank)
    counts, spread = m.pop("counts"), m.pop("spread")
    kept_share = m["variances"].sum(axis=1) / np.maximum(spread, 1e-30)
    log(f"{len(counts)} clusters kept, rows per cluster min {counts.min()} median "
        f"{int(np.median(counts))} max {counts.max()}; the top {a.rank} directions carry "
        f"{np.median(kept_share):.0%} of a cluster's variance (median); "
        f"{time.monotonic() - t0:.0f} s")
    a.model.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.model.with_name(a.model.name + ".part")
    with open(tmp, "wb") as f:
        np.savez(f, **m, dim=a.dim, rank=a.rank, seed=a.seed, fit_rows=n)
    os.replace(tmp, a.model)
    print(f"wrote {a.model}")


# ----------------------------------------------------------------------------- draw


def shrunk(m: dict[str, np.ndarray], nu: float) -> dict[str, np.ndarray]:
    """The model with each cluster's covariance moved toward isotropic by min(1, nu / rows it
    was fitted to), its total variance kept: a few rows' principal directions are mostly noise."""
    if nu <= 0:
        return m
    counts = np.rint(m["weights"] * int(m["fit_rows"]))
    var, iso = m["variances"].astype(np.float64), m["iso"].astype(np.float64)
    dim, rank = m["means"].shape[1], var.shape[1]
    lam = np.minimum(1.0, nu / np.maximum(counts, 1))
    flat = lam * (var.sum(axis=1) + iso * (dim - rank)) / dim
    return {**m, "variances": ((1 - lam)[:, None] * var + flat[:, None]).astype(np.float32),
            "iso": ((1 - lam) * iso + flat).astype(np.float32)}


def twin_anchors(m: dict[str, np.ndarray], seed: int) -> np.ndarray:
    """One deviation from the mean per cluster (its own random stream, shared by rows and
    queries): the point a cluster's twins are drawn around."""
    rng = np.random.default_rng([seed, TWINS_STREAM])
    k, rank, dim = m["axes"].shape
    z = rng.standard_normal((k, rank), dtype=np.float32) * np.sqrt(m["variances"])
    w = rng.standard_normal((k, dim), dtype=np.float32) * np.sqrt(m["iso"])[:, None]
    return np.einsum("kr,krd->kd", z, m["axes"]) + w


def draw_chunk(m: dict[str, np.ndarray], rng: np.random.Generator, n: int,
               twins: tuple[float, float, np.ndarray] | None = None) -> np.ndarray:
    k, rank, dim = m["axes"].shape
    comp = rng.choice(k, size=n, p=m["weights"])
    z = rng.standard_normal((n, rank), dtype=np.float32) * np.sqrt(m["variances"])[comp]
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x *= np.sqrt(m["iso"])[comp, None]
    if twins is not None:  # drawn last: rows share comp, z and w with a draw without twins
        share, jitter, anchors = twins
        t = np.flatnonzero(rng.random(n) < share)
        # anchor * sqrt(1 - j^2) + own deviation * j: the same Gaussian, but two twins of a
        # cluster lie only 2 j^2 of its variance apart.
        z[t] *= np.float32(jitter)
        x[t] *= np.float32(jitter)
        x[t] += np.float32(np.sqrt(1 - jitter ** 2)) * anchors[comp[t]]
    # Mean and low-rank part cluster by cluster (a small matmul each, no chunk-sized gather of
    # means); rows stay in draw order.
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(k + 1))
    for c in np.flatnonzero(np.diff(bounds)):
        idx = order[bounds[c]:bounds[c + 1]]
        x[idx] += z[idx] @ m["axes"][c] + m["means"][c]
    return unit(x)


def write_drawn(path: Path, m: dict[str, np.ndarray], digest: str, seed: int, stream: int,
                total: int, chunk: int, options: dict[str, float],
                twins: tuple[float, float, np.ndarray] | None) -> None:
    row_bytes = m["means"].shape[1] * 4
    if done_already(path, total * row_bytes):
        return
    part = path.with_name(path.name + ".part")
    meta = path.with_name(path.name + ".part.json")
    params = {"model_sha256": digest, "seed": seed, "stream": stream, "chunk": chunk,
              "rows": total}
    params.update({key: v for key, v in options.items() if v})  # old .part.json files stay valid
    done = 0
    if part.exists() and meta.exists() and json.loads(meta.read_text()) == params:
        have = part.stat().st_size // row_bytes
        done = total if have >= total else have // chunk * chunk  # whole chunks only
        log(f"{part}: going on from row {done:,}")
    else:
        meta.write_text(json.dumps(params))
    progress = Progress(f"draw {path.name}", total, done)
    with open(part, "r+b" if done else "wb") as f:
        f.truncate(done * row_bytes)
        f.seek(done * row_bytes)
        for start in range(done, total, chunk):
            rng = np.random.default_rng([seed, stream, start // chunk])
            x = draw_chunk(m, rng, min(chunk, total - start), twins)
            f.write(np.ascontiguousarray(x, dtype="<f4").data)
            progress.update(start + len(x))
    finish(part, path)
    meta.unlink()
    log(f"wrote {path}")


def cmd_draw(a: argparse.Namespace) -> None:
    """Samples rows and queries from the model."""
    with np.load(a.model) as z:
        m = {key: z[key] for key in z.files}
    with open(a.model, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    dim = int(m["dim"])
    if a.shrink < 0 or not 0 <= a.twin_share <= 1 or not 0 <= a.twin_jitter <= 1:
        sys.exit("--shrink must be at least 0, --twin-share and --twin-jitter in 0..1")
    options = {"shrink": a.shrink, "twin_share": a.twin_share, "twin_jitter": a.twin_jitter}
    m = shrunk(m, a.shrink)
    twins = (a.twin_share, a.twin_jitter, twin_anchors(m, a.seed)) if a.twin_share else None
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.out / f"drawn-{dim}-{a.rows}"
    write_drawn(stem.with_name(stem.name + ".f32"), m, digest, a.seed, ROWS_STREAM, a.rows,
                a.chunk, options, twins)
    write_drawn(stem.with_name(stem.name + ".queries.f32"), m, digest, a.seed, QUERIES_STREAM,
                a.queries, a.chunk, options, twins)


# ----------------------------------------------------------------------------- truth


def chunk_top(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest values of each row of sims and their columns (unsorted), ties at the
    k-th value going to the lower columns."""
    if sims.shape[1] <= k:
        return sims, np.broadcast_to(np.arange(sims.shape[1]), sims.shape).copy()
    cols = np.argpartition(sims, -k, axis=1)[:, -k:]
    vals = np.take_along_axis(sims, cols, axis=1)
    kth = vals.min(axis=1)
    # argpartition settles ties at the k-th value arbitrarily: redo the rows where that matters.
    for r in np.flatnonzero(np.count_nonzero(sims >= kth[:, None], axis=1) > k):
        c = np.flatnonzero(sims[r] >= kth[r])
        c = c[np.lexsort((c, -sims[r, c]))][:k]
        cols[r], vals[r] = c, sims[r, c]
    return vals, cols


def scan(queries: np.ndarray, rows: np.ndarray, offset: int, best: tuple[np.ndarray, np.ndarray],
         k: int, block: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Merges rows (global indices from offset) into the running top k of each query, kept
    sorted by similarity descending, then index ascending. Blocks of rows keep the similarity
    matrix and argpartition's int64 output small (1000 queries: 80 + 160 MB)."""
    for b in range(0, len(rows), block):
        vals, cols = chunk_top(queries @ rows[b:b + block].T, k)
        s = np.concatenate([best[0], vals], axis=1)
        i = np.concatenate([best[1], cols.astype(np.int64) + offset + b], axis=1)
        order = np.lexsort((i, -s), axis=-1)[:, :k]
        best = np.take_along_axis(s, order, axis=1), np.take_along_axis(i, order, axis=1)
    return best


def empty_best(q: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty((q, 0), np.float32), np.empty((q, 0), np.int64)


def cmd_truth(a: argparse.Namespace) -> None:
    """Exact top-k neighbours of the drawn queries."""
    stem = a.out / f"drawn-{a.dim}-{a.rows}"
    rows_path = stem.with_name(stem.name + ".f32")
    queries_path = stem.with_name(stem.name + ".queries.f32")
    idx_path = stem.with_name(f"{stem.name}.truth{a.k}.i32")
    dist_path = stem.with_name(f"{stem.name}.truth{a.k}.f32")
    n = row_count(rows_path, a.dim)
    if n != a.rows or a.k > n:
        sys.exit(f"{rows_path} has {n:,} rows, wanted {a.rows:,} (and at least --k)")
    queries = read_rows(queries_path, a.dim, 0, row_count(queries_path, a.dim))
    q = len(queries)
    if done_already(idx_path, q * a.k * 4) and done_already(dist_path, q * a.k * 4):
        return
    # The running top k is saved after every chunk, to go on from after an interruption.
    state_path = stem.with_name(f"{stem.name}.truth{a.k}.state.npz")
    done, best = 0, empty_best(q)
    stamp = rows_path.stat().st_mtime_ns  # a redrawn rows file makes the state stale
    if state_path.exists():
        with np.load(state_path) as st:
            if (int(st["chunk"]), int(st["stamp"]), st["sims"].shape[0]) == (a.chunk, stamp, q):
                done, best = int(st["done"]), (st["sims"], st["idx"])
                log(f"{state_path}: going on from row {done:,}")
    progress = Progress(f"truth {rows_path.name}", n, done)
    with open(rows_path, "rb") as f:
        f.seek(done * a.dim * 4)
        for start in range(done, n, a.chunk):
            count = min(a.chunk, n - start)
            rows = np.fromfile(f, dtype="<f4", count=count * a.dim).reshape(count, a.dim)
            best = scan(queries, rows, start, best, a.k)
            tmp = state_path.with_name(state_path.name + ".part")
            with open(tmp, "wb") as sf:
                np.savez(sf, done=start + count, chunk=a.chunk, stamp=stamp, sims=best[0],
                         idx=best[1])
            os.replace(tmp, state_path)
            progress.update(start + count)
    for path, data in ((dist_path, (1.0 - best[0]).astype("<f4")),
                       (idx_path, best[1].astype("<i4"))):
        part = path.with_name(path.name + ".part")
        data.tofile(part)
        finish(part, path)
        log(f"wrote {path}")
    state_path.unlink()


# ----------------------------------------------------------------------------- check


def neighbour_distances(queries: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    return 1.0 - scan(queries, rows, 0, empty_best(len(queries)), k)[0].astype(np.float64)


def cmd_check(a: argparse.Namespace) -> None:
    """Compares neighbour distances, real against drawn."""
    from scipy.stats import ks_2samp

    n_real = row_count(a.source, a.dim)
    drawn_queries = a.drawn.with_name(a.drawn.name.removesuffix(".f32") + ".queries.f32")
    nq = min(a.queries, row_count(drawn_queries, a.dim))
    if n_real >= a.sample + nq:  # the queries other harnesses use
        q_start, real_rows = a.sample, a.sample
    else:  # a held-out tail
        nq = min(nq, n_real // 2)
        q_start = real_rows = n_real - nq
    m = min(a.sample, real_rows, row_count(a.drawn, a.dim))
    log(f"{m:,} rows and {nq} queries of each; real queries are rows {q_start}..{q_start + nq - 1}")
    real = neighbour_distances(unit(read_rows(a.source, a.dim, q_start, nq)),
                               unit(read_rows(a.source, a.dim, 0, m)), a.k)
    drawn = neighbour_distances(read_rows(drawn_queries, a.dim, 0, nq),
                                read_rows(a.drawn, a.dim, 0, m), a.k)
    columns = [("real NN", real[:, 0]), ("drawn NN", drawn[:, 0]),
               (f"real {a.k}th", real[:, a.k - 1]), (f"drawn {a.k}th", drawn[:, a.k - 1])]
    print(f"Cosine distance of each query to its nearest and {a.k}th-nearest of {m:,} rows "
          f"({nq} queries each)\n")
    print("| | " + " | ".join(name for name, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    stats = [("mean", np.mean), ("25%", lambda v: np.percentile(v, 25)),
             ("median", np.median), ("75%", lambda v: np.percentile(v, 75))]
    for label, fn in stats:
        print(f"| {label} | " + " | ".join(f"{fn(v):.4f}" for _, v in columns) + " |")
    nn = ks_2samp(real[:, 0], drawn[:, 0])
    kth = ks_2samp(real[:, a.k - 1], drawn[:, a.k - 1])
    print(f"| KS D (p) | {nn.statistic:.3f} (p={nn.pvalue:.3g}) | | "
          f"{kth.statistic:.3f} (p={kth.pvalue:.3g}) | |\n")
    print(f"NN distance distributions: KS D={nn.statistic:.4f}, p={nn.pvalue:.4g}")
    print(f"{a.k}th-NN distance distributions: KS D={kth.statistic:.4f}, p={kth.pvalue:.4g}")


# ----------------------------------------------------------------------------- main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    # name -> (function, [(option, type, default; None: required)])
    commands = {
        "fit": (cmd_fit, [("source", Path, None), ("dim", int, None), ("model", Path, None),
                          ("fit-rows", int, RESERVED_QUERIES_FROM), ("centroids", int, 1000),
                          ("rank", int, 16), ("iters", int, 20), ("seed", int, 1)]),
        "draw": (cmd_draw, [("model", Path, None), ("rows", int, None), ("out", Path, None),
                            ("queries", int, 1000), ("seed", int, 1), ("chunk", int, 100_000),
                            ("shrink", float, 0.0), ("twin-share", float, 0.0),
                            ("twin-jitter", float, 0.3)]),
        "truth": (cmd_truth, [("out", Path, None), ("dim", int, None), ("rows", int, None),
                              ("k", int, 100), ("chunk", int, 100_000)]),
        "check": (cmd_check, [("source", Path, None), ("dim", int, None), ("drawn", Path, None),
                              ("sample", int, RESERVED_QUERIES_FROM), ("queries", int, 300),
                              ("k", int, 10)]),
    }
    for name, (run, options) in commands.items():
        cmd = sub.add_parser(name, help=run.__doc__)
        cmd.set_defaults(run=run)
        for option, kind, default in options:
            cmd.add_argument(f"--{option}", type=kind, default=default, required=default is None)
    a = p.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
