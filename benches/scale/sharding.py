#!/usr/bin/env python3
"""kNN search on one server against the same rows hash-partitioned over shards through
postgres_fdw: sequential latency (p50, p99) and queries per second of N client sessions.

  1. A coordinator (our library, postgres_fdw) and --shards shard servers. The coordinator
     loads N deterministic vectors and Q query vectors into a local table `ref`
     (benches/hnsw/bench.py's data sets, binary COPY) and copies the rows into `items`, a
     table PARTITION BY HASH (id) whose partitions are foreign tables, one per shard
     (servers with extensions 'vector', async_capable 'true'); the same hnsw index is built
     on ref and on every shard's table (the shards build theirs at the same time).
  2. Three ways to ask for the k nearest rows, each timed:
       one server   SELECT ... FROM ref ORDER BY embedding <-> q LIMIT k
       parent       the same on items: a Merge Append of the shards' scans, each shard's
                    ORDER BY shipped without the LIMIT, the shards asked one after another
       per-shard    a MATERIALIZED CTE of one ORDER BY ... LIMIT k per partition, UNION ALL,
                    then ORDER BY ... LIMIT k: the LIMIT is shipped and the shards are asked
                    at the same time (Async Foreign Scans under an Append)
     with hnsw.ef_search set on ref and, through the servers' libpq options, on the shards.
  3. Recall@k of each against exact answers (ref, sequential scan); the parent's and the
     per-shard form's answers must be identical.
  4. Sequential latency of each (one session, --repeat passes pooled), then queries per
     second of each with N sessions, --repeat times, rotating which goes first, median
     reported (common.py says how both are timed); a markdown table on stdout, written with
     the raw numbers (JSON) under --workdir.

Every server runs on this machine: the shards share its cores with each other and with the
coordinator, so this measures the cost of the machinery, not a speed-up. Run
`sharding.py --help`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from common import (DEFAULT_INSTALL, add_workload_args, Dataset, Server, Target, data_files, fresh_dir, latencies,
                    log, machine_note, parse_answers, percentile, recall, run_clients)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", type=Path, default=Path("/tmp/scale-bench/sharding"))
    p.add_argument("--install", type=Path, default=DEFAULT_INSTALL,
                   help="PostgreSQL installation with our library and postgres_fdw "
                        "(default: %(default)s)")
    p.add_argument("--port", type=int, default=55623,
                   help="the coordinator's port; shard i's is this + 1 + i")
    p.add_argument("--shards", type=int, default=3)
    add_workload_args(p)
    p.add_argument("--per-client", type=int, default=200, help="queries each session runs")
    p.add_argument("--fetch-size", type=int, default=0,
                   help="postgres_fdw's fetch_size on every shard's server (0: its default, 100)")
    p.add_argument("--shared-buffers", default="512MB")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    clients = [int(c) for c in a.clients.split(",")]
    ds = Dataset(a.kind, a.rows, a.dim, a.queries, a.seed)
    items_file, queries_file = data_files(ds, a.workdir / "data")
    # Every client session of the coordinator opens one connection to each shard.
    settings = {"shared_buffers": a.shared_buffers, "max_parallel_workers_per_gather": "0",
                "fsync": "off", "max_connections": str(max(clients) * 2 + 20)}
    root = fresh_dir(a.workdir / "servers")
    coord = Server("coordinator", a.install, a.port, root / "coordinator", settings)
    shards = [Server(f"shard{i}", a.install, a.port + 1 + i, root / f"shard{i}", settings)
              for i in range(a.shards)]
    every = [coord, *shards]
    index = (f"USING hnsw (embedding vector_l2_ops) WITH (m = {a.m}, "
             f"ef_construction = {a.ef_construction})")
    try:
        for s in every:
            s.start()
        for s in shards:
            s.psql(f"CREATE EXTENSION vector; "
                   f"CREATE TABLE items (id int4 PRIMARY KEY, embedding vector({a.dim}));")
        coord.psql(f"""
            CREATE EXTENSION vector;
            CREATE EXTENSION postgres_fdw;
            CREATE TABLE ref (id int4 PRIMARY KEY, embedding vector({a.dim}));
            CREATE TABLE queries (id int4, embedding vector({a.dim}));
            COPY ref FROM '{items_file}' WITH (FORMAT binary);
            COPY queries FROM '{queries_file}' WITH (FORMAT binary);
            CREATE TABLE items (id int4, embedding vector({a.dim})) PARTITION BY HASH (id);""")
        options = "" if a.ef_search == 40 else f", options '-c hnsw.ef_search={a.ef_search}'"
        if a.fetch_size:
            options += f", fetch_size '{a.fetch_size}'"
        for i, s in enumerate(shards):
            coord.psql(f"""
                CREATE SERVER shard{i} FOREIGN DATA WRAPPER postgres_fdw
                  OPTIONS (host '{s.sockdir}', port '{s.port}', dbname 'postgres',
                           extensions 'vector', async_capable 'true', batch_size '1000'{options});
                CREATE USER MAPPING FOR postgres SERVER shard{i} OPTIONS (user 'postgres');
                CREATE FOREIGN TABLE items_{i} PARTITION OF items
                  FOR VALUES WITH (MODULUS {a.shards}, REMAINDER {i})
                  SERVER shard{i} OPTIONS (table_name 'items');""")
        t0 = time.perf_counter()
        coord.psql("INSERT INTO items SELECT id, embedding FROM ref;")
        load_s = time.perf_counter() - t0
        log(f"copied {a.rows} rows to {a.shards} shards through the parent in {load_s:.1f}s")

        builds = {}

        def build(s: Server, table: str) -> None:
            t = time.perf_counter()
            s.psql(f"SET maintenance_work_mem = '1GB'; CREATE INDEX ON {table} {index}; "
                   f"VACUUM ANALYZE {table}; CHECKPOINT;")
            builds[s.name] = time.perf_counter() - t

        threads = [threading.Thread(target=build, args=(s, "items")) for s in shards]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if len(builds) != len(shards):
            raise SystemExit("a shard's index build failed")
        build(coord, "ref")
        coord.psql("VACUUM ANALYZE queries; ANALYZE items;")
        log("builds: " + ", ".join(f"{n} {t:.1f}s" for n, t in builds.items()))

        vectors = coord.psql("SELECT embedding::text FROM queries ORDER BY id").split()
        k = a.k

        def single(v: str) -> str:
            return f"SELECT id, embedding <-> '{v}' FROM ref ORDER BY embedding <-> '{v}' LIMIT {k};"

        def parent(v: str) -> str:
            return (f"SELECT id, embedding <-> '{v}' FROM items "
                    f"ORDER BY embedding <-> '{v}' LIMIT {k};")

        def per_shard(v: str) -> str:
            parts = " UNION ALL ".join(
                f"(SELECT id, embedding <-> '{v}' AS d FROM items_{i} "
                f"ORDER BY embedding <-> '{v}' LIMIT {k})" for i in range(a.shards))
            return f"WITH c AS MATERIALIZED ({parts}) SELECT id, d FROM c ORDER BY d LIMIT {k};"

        setup = f"SET hnsw.ef_search = {a.ef_search};"
        targets = [Target("one server", coord, setup, single),
                   Target(f"{a.shards} shards, parent", coord, "", parent),
                   Target(f"{a.shards} shards, per-shard form", coord, "", per_shard)]
        plans = {t.name: coord.psql(f"EXPLAIN (VERBOSE, COSTS OFF) {t.statement(vectors[0])}")
                 for t in targets}
        truth = parse_answers(latencies(Target("exact", coord, "SET enable_indexscan = off;",
                                               single), vectors)[1], k)
        result = {"started": started, "args": {key: str(v) for key, v in vars(a).items()},
                  "load_s": load_s, "builds": builds, "targets": {},
                  "plans": {n: p.replace(vectors[0], "q") for n, p in plans.items()}}
        answers = {}
        for t in targets:
            # The first pass warms the caches; its answers are kept.
            answers[t.name] = parse_answers(latencies(t, vectors)[1], k)
            ms = [x for _ in range(a.repeat) for x in latencies(t, vectors)[0]]
            result["targets"][t.name] = {
                "recall": recall(answers[t.name], truth), "p50": percentile(ms, 50),
                "p99": percentile(ms, 99), "mean": statistics.mean(ms), "qps": {}}
            log(f"[{t.name}] recall {result['targets'][t.name]['recall']:.4f}, sequential "
                f"p50 {percentile(ms, 50):.2f} ms, p99 {percentile(ms, 99):.2f} ms")
        same = answers[targets[1].name] == answers[targets[2].name]
        result["parent_equals_per_shard"] = same
        log(f"parent and per-shard answers identical: {same}")
        for n in clients:
            passes = {t.name: [] for t in targets}
            for r in range(a.repeat):
                # Rotate which goes first: the machine's load drifts.
                for t in targets[r % len(targets):] + targets[:r % len(targets)]:
                    wall, counts = run_clients(
                        [t] * n, vectors, a.per_client,
                        a.workdir / "clients" / f"{t.name.replace(' ', '_')}-{n}")
                    if any(c != a.per_client * k for c in counts):
                        raise SystemExit(f"{t.name} with {n} clients: row counts {counts}")
                    passes[t.name].append(n * a.per_client / wall)
            for name, v in passes.items():
                result["targets"][name]["qps"][n] = statistics.median(v)
                result["targets"][name].setdefault("qps_passes", {})[n] = v
                log(f"{n} clients, {name}: {' '.join(f'{x:.0f}' for x in v)} queries/s")
        result["machine"] = machine_note()
        result["server"] = coord.describe()
        md = markdown(a, result)
        print(md)
        out = a.workdir / f"sharding-{ds.name}-{started.replace(' ', '_')}"
        out.with_suffix(".md").write_text(md)
        out.with_suffix(".json").write_text(json.dumps(result, indent=1))
        log(f"wrote {out}.md and .json")
        return 0 if same else 1
    finally:
        for s in every:
            s.stop()


def markdown(a, r: dict) -> str:
    clients = sorted({n for t in r["targets"].values() for n in t["qps"]})
    lines = [
        f"Sharding: {a.kind} {a.rows} x {a.dim}, {a.queries} queries, k = {a.k}, hnsw m = {a.m}, "
        f"ef_construction = {a.ef_construction}, ef_search = {a.ef_search} (on each shard); "
        f"postgres_fdw fetch_size {a.fetch_size or 'default (100)'}; "
        f"{a.shards} shards and the coordinator on one machine; {r['server']}; {r['machine']}; "
        f"started {r['started']}",
        "",
        f"Copy of the rows through the parent {r['load_s']:.1f} s; builds "
        + ", ".join(f"{n} {t:.1f} s" for n, t in r["builds"].items())
        + f"; parent and per-shard answers identical: "
          f"{'yes' if r['parent_equals_per_shard'] else 'NO'}",
        "",
        f"Latency: one session, {a.repeat} x {a.queries} queries; q/s: N sessions of "
        f"{a.per_client} queries each, median of {a.repeat}.",
        "",
        f"| query | recall@{a.k} | p50 ms | p99 ms | mean ms | "
        + " | ".join(f"{n} sessions, q/s" for n in clients) + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(clients),
    ]
    for name, t in r["targets"].items():
        lines.append(f"| {name} | {t['recall']:.4f} | {t['p50']:.2f} | {t['p99']:.2f} | "
                     f"{t['mean']:.2f} | " + " | ".join(f"{t['qps'][n]:.0f}" for n in clients)
                     + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
