#!/usr/bin/env python3
"""Reads runs of consecutive 8 kB blocks (an ivfflat query's lists) from a cold file, plainly
(the kernel's read-ahead alone) or with POSIX_FADV_WILLNEED hints kept ahead of the reader
(what ivfflat's hinted reads ask of the kernel), and prints the time per query and the time
spent in the hint calls. Run as root (it drops the page cache), optionally in a memory
cgroup of its own, as cold.py runs the servers:

    python3 benches/hnsw/list_reads.py --dir /tmp/am-tests/bench --cgroup-mb 60
"""

import argparse
import os
import random
import time
from pathlib import Path

BLOCK = 8192


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


def query(fd: int, starts: list[int], blocks: int, run: int, ahead: int) -> tuple[float, float]:
    """Reads `blocks` blocks from each start; hints runs of `run` blocks, `ahead` runs ahead
    (none when run is 0), never across a list's end. Returns (seconds, seconds in hints)."""
    hint_s = 0.0
    began = time.perf_counter()
    for start in starts:
        hinted = start + 1  # the first block of a list is read plainly, as the scans do
        end = start + blocks
        for block in range(start, end):
            while run and hinted < end and hinted < block + 1 + run * ahead:
                count = min(run, end - hinted)
                t = time.perf_counter()
                os.posix_fadvise(fd, hinted * BLOCK, count * BLOCK, os.POSIX_FADV_WILLNEED)
                hint_s += time.perf_counter() - t
                hinted += count
            os.pread(fd, BLOCK, block * BLOCK)
    return time.perf_counter() - began, hint_s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=Path("/tmp/am-tests/bench"))
    p.add_argument("--file-mb", type=int, default=512)
    p.add_argument("--lists", type=int, default=10, help="lists a query reads")
    p.add_argument("--blocks", type=int, default=850, help="blocks a list holds")
    p.add_argument("--queries", type=int, default=5, help="queries a measurement reads")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", default="0,16,128", help="hint run lengths in blocks (0: plain)")
    p.add_argument("--ahead", type=int, default=16, help="hinted runs ahead (the I/O budget)")
    p.add_argument("--cgroup-mb", type=int, default=0, help="memory cgroup (v1) limit, 0: none")
    args = p.parse_args()

    if args.cgroup_mb:
        cg = Path("/sys/fs/cgroup/memory/list-reads")
        cg.mkdir(exist_ok=True)
        (cg / "memory.limit_in_bytes").write_text(str(args.cgroup_mb << 20))
        (cg / "cgroup.procs").write_text(str(os.getpid()))

    path = args.dir / "list_reads.data"
    size = args.file_mb << 20
    if not path.exists() or path.stat().st_size != size:
        with open(path, "wb") as f:
            for _ in range(args.file_mb):
                f.write(os.urandom(1 << 20))
    nblocks = size // BLOCK
    rng = random.Random(1)
    runs = [int(r) for r in args.runs.split(",")]
    print(f"{args.queries} queries of {args.lists} lists x {args.blocks} blocks, "
          f"{args.ahead} hints ahead, cgroup {args.cgroup_mb or 'none'} MB")
    for round_no in range(args.rounds):
        for run in runs:
            drop_caches()
            fd = os.open(path, os.O_RDONLY)
            total = hints = 0.0
            for _ in range(args.queries):
                starts = [rng.randrange(0, nblocks - args.blocks) for _ in range(args.lists)]
                s, h = query(fd, starts, args.blocks, run, args.ahead)
                total += s
                hints += h
            os.close(fd)
            what = "plain" if run == 0 else f"hinted runs of {run}"
            print(f"round {round_no}: {what}: {total / args.queries * 1000:.1f} ms a query, "
                  f"{hints / args.queries * 1000:.1f} ms of it in hints", flush=True)


if __name__ == "__main__":
    main()
