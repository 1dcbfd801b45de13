#!/usr/bin/env python3
"""Read scale-out on a streaming standby: kNN queries per second of N client sessions on the
primary alone, against the same N sessions split between the primary and its hot standby.

  1. A primary (our library) loads N deterministic vectors and Q query vectors
     (benches/hnsw/bench.py's data sets, binary COPY) and builds an hnsw index;
  2. a standby is made from a base backup and started (hot_standby, defaults otherwise);
     once it has replayed the primary's flush LSN, both servers answer every query and the
     answers (ids and distances) must be identical;
  3. sequential latency (p50, p99, mean) of the queries on each server, one session, over
     --repeat passes;
  4. for each client count: queries per second with every session on the primary, and with
     the sessions alternating between primary and standby (common.py says how it is timed),
     --repeat times each, alternating which goes first; the median is reported;
  5. a markdown table on stdout, written with the raw numbers (JSON) under --workdir.

Both servers run on this machine: they share its cores, so the split can only gain where
the primary alone leaves cores idle. Run `replicas.py --help`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import (DEFAULT_INSTALL, add_workload_args, Dataset, Server, Target, as_postgres, data_files,
                    fresh_dir, latencies, log, machine_note, parse_answers, percentile, recall,
                    run_clients, server_env)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", type=Path, default=Path("/tmp/scale-bench/replicas"))
    p.add_argument("--install", type=Path, default=DEFAULT_INSTALL,
                   help="PostgreSQL installation with our library (default: %(default)s)")
    p.add_argument("--port", type=int, default=55621, help="primary's port; the standby's is +1")
    add_workload_args(p)
    p.add_argument("--per-client", type=int, default=400, help="queries each session runs")
    p.add_argument("--shared-buffers", default="512MB")
    return p.parse_args(argv)


def wait_for_replay(primary: Server, standby: Server, timeout: float = 300) -> str:
    lsn = primary.psql("SELECT pg_current_wal_flush_lsn()").strip()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if standby.psql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'").strip() == "t":
            return lsn
        time.sleep(0.2)
    raise SystemExit(f"the standby did not replay up to {lsn} in {timeout:.0f} s")


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    clients = [int(c) for c in a.clients.split(",")]
    ds = Dataset(a.kind, a.rows, a.dim, a.queries, a.seed)
    items_file, queries_file = data_files(ds, a.workdir / "data")
    settings = {"shared_buffers": a.shared_buffers, "max_parallel_workers_per_gather": "0",
                "fsync": "off", "max_connections": str(max(clients) * 2 + 20)}
    servers = fresh_dir(a.workdir / "servers")
    primary = Server("primary", a.install, a.port, servers / "primary", settings)
    standby = Server("standby", a.install, a.port + 1, servers / "standby", settings)
    try:
        primary.start()
        t0 = time.perf_counter()
        primary.psql(f"""
            CREATE EXTENSION vector;
            CREATE TABLE items (id int4, embedding vector({a.dim}));
            CREATE TABLE queries (id int4, embedding vector({a.dim}));
            COPY items FROM '{items_file}' WITH (FORMAT binary);
            COPY queries FROM '{queries_file}' WITH (FORMAT binary);
            VACUUM ANALYZE items; VACUUM ANALYZE queries;""")
        log(f"loaded {ds.name} in {time.perf_counter() - t0:.1f}s")
        t0 = time.perf_counter()
        primary.psql(f"SET maintenance_work_mem = '1GB'; CREATE INDEX items_hnsw ON items "
                     f"USING hnsw (embedding vector_l2_ops) WITH (m = {a.m}, "
                     f"ef_construction = {a.ef_construction}); CHECKPOINT;")
        build_s = time.perf_counter() - t0
        log(f"built the hnsw index in {build_s:.1f}s")

        fresh_dir(standby.root)
        subprocess.run(as_postgres([str(a.install / "bin" / "pg_basebackup"), "-h",
                                    str(primary.sockdir), "-p", str(primary.port), "-U",
                                    "postgres", "-D", str(standby.datadir), "-R", "-X",
                                    "stream", "-c", "fast"]), check=True, env=server_env())
        standby.start()
        if standby.psql("SELECT pg_is_in_recovery()").strip() != "t":
            raise SystemExit("the standby is not in recovery")
        lsn = wait_for_replay(primary, standby)
        log(f"standby replayed up to {lsn}")

        vectors = primary.psql("SELECT embedding::text FROM queries ORDER BY id").split()
        setup = f"SET hnsw.ef_search = {a.ef_search};"

        def statement(v: str) -> str:
            return (f"SELECT id, embedding <-> '{v}' FROM items "
                    f"ORDER BY embedding <-> '{v}' LIMIT {a.k};")

        on_primary = Target("primary", primary, setup, statement)
        on_standby = Target("standby", standby, setup, statement)
        exact = Target("exact", primary, "SET enable_indexscan = off;", statement)
        truth = parse_answers(latencies(exact, vectors)[1], a.k)

        # A first pass on each server warms its caches; its answers are compared.
        answers = {t.name: parse_answers(latencies(t, vectors)[1], a.k)
                   for t in (on_primary, on_standby)}
        identical = answers["primary"] == answers["standby"]
        log(f"answers identical on both servers: {identical}")
        seq = {}
        for t in (on_primary, on_standby):
            ms = [x for _ in range(a.repeat) for x in latencies(t, vectors)[0]]
            seq[t.name] = {"p50": percentile(ms, 50), "p99": percentile(ms, 99),
                           "mean": statistics.mean(ms)}
            log(f"[{t.name}] sequential p50 {seq[t.name]['p50']:.2f} ms, "
                f"p99 {seq[t.name]['p99']:.2f} ms")

        qps, passes = {}, {}
        for n in clients:
            pools = {"primary": [on_primary] * n,
                     "split": [(on_primary, on_standby)[i % 2] for i in range(n)]}
            passes[n] = {label: [] for label in pools}
            for r in range(a.repeat):
                # Alternate which goes first: the machine's load drifts.
                for label in (list(pools) if r % 2 == 0 else list(reversed(pools))):
                    wall, counts = run_clients(pools[label], vectors, a.per_client,
                                               a.workdir / "clients" / f"{label}-{n}")
                    if any(c != a.per_client * a.k for c in counts):
                        raise SystemExit(f"{label} with {n} clients: row counts {counts}")
                    passes[n][label].append(n * a.per_client / wall)
            qps[n] = {label: statistics.median(v) for label, v in passes[n].items()}
            log(f"{n} clients: " + ", ".join(
                f"{label} {' '.join(f'{x:.0f}' for x in v)} queries/s"
                for label, v in passes[n].items()))

        result = {"started": started, "args": {k: str(v) for k, v in vars(a).items()},
                  "build_s": build_s, "identical": identical,
                  "recall": recall(answers["primary"], truth), "sequential": seq, "qps": qps,
                  "qps_passes": passes,
                  "machine": machine_note(), "server": primary.describe()}
        md = markdown(a, result)
        print(md)
        out = a.workdir / f"replicas-{ds.name}-{started.replace(' ', '_')}"
        out.with_suffix(".md").write_text(md)
        out.with_suffix(".json").write_text(json.dumps(result, indent=1))
        log(f"wrote {out}.md and .json")
        return 0 if identical else 1
    finally:
        standby.stop()
        primary.stop()


def markdown(a, r: dict) -> str:
    lines = [
        f"Replicas: {a.kind} {a.rows} x {a.dim}, {a.queries} queries, k = {a.k}, hnsw m = {a.m}, "
        f"ef_construction = {a.ef_construction}, ef_search = {a.ef_search}; {r['server']}; "
        f"{r['machine']}; started {r['started']}",
        "",
        f"Build {r['build_s']:.1f} s; recall@{a.k} {r['recall']:.4f}; answers (ids and "
        f"distances) identical on primary and standby: {'yes' if r['identical'] else 'NO'}",
        "",
        "| server | p50 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|",
    ]
    for name, s in r["sequential"].items():
        lines.append(f"| {name} (1 session, {a.repeat} x {a.queries} queries) | {s['p50']:.2f} | {s['p99']:.2f} | {s['mean']:.2f} |")
    lines += ["", f"| sessions ({a.per_client} queries each; median of {a.repeat}) | "
                  "primary alone, q/s | primary + standby, q/s | ratio |",
              "|---:|---:|---:|---:|"]
    for n, runs in r["qps"].items():
        lines.append(f"| {n} | {runs['primary']:.0f} | {runs['split']:.0f} | "
                     f"{runs['split'] / runs['primary']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
