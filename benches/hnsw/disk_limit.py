#!/usr/bin/env python3
"""What the disk under the benchmarks can do with random 8 kB reads: the physical limit that
the cold-cache numbers of cold.py approach.

A cold hnsw query is a few hundred random 8 kB reads. Read one after the other (pgvector),
each costs one device latency; overlapped (ours), they cost at best the device's time per read
when many are in flight. The ratio of the two bounds ours ÷ pgvector from below, whatever the
index does, as long as both read the same blocks.

Method: a scratch file of --mb MB (random bytes, written once, fsynced) in --dir; before each
measurement the file is dropped from the page cache (POSIX_FADV_DONTNEED, and drop_caches when
root), then --reads random 8 kB blocks are read:
  * "processes P": P processes each pread their share, one at a time (P reads in flight);
  * "window W": one process keeps W reads requested ahead with POSIX_FADV_WILLNEED and preads
    them in order, which is what PrefetchBuffer does within a hop of our walk;
  * "hops of H": one process requests H blocks at once, reads them, and only then requests
    the next H: a graph walk, where the next hop's blocks are known only once this hop's
    elements are compared. --hop-reads (8: ~7.7 reads per hop in cold.py's runs).
Each setting runs --repeat times; the table shows the median microseconds per read (wall time
÷ reads). Standard library only; run it right before or after cold.py, as the disk's speed
varies over time on a shared machine.

  python3 benches/hnsw/disk_limit.py --dir /tmp/am-tests/bench

With --lists L: the throughput an ivfflat probe can reach instead: L contiguous lists of
--list-mb MB read 8 kB at a time, plainly (pgvector: the kernel's read-ahead, which reads
past each list's end) or with WILLNEED runs kept ahead (ours), with the process's CPU time
and the bytes the disk delivered per byte of list. A cold probe that must read B bytes takes
at least B ÷ the best MB/s here.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

BLOCK = 8192


def drop_from_cache(fd: int) -> None:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    if os.geteuid() == 0:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")


def blocks_to_read(nblocks: int, reads: int, seed: int) -> list[int]:
    return random.Random(seed).sample(range(nblocks), reads)


def read_in_processes(path: Path, blocks: list[int], processes: int) -> float:
    """Wall seconds for `processes` processes to pread their share of `blocks`."""
    shares = [blocks[i::processes] for i in range(processes)]
    started = time.perf_counter()
    children = []
    for share in shares:
        pid = os.fork()
        if pid == 0:
            fd = os.open(path, os.O_RDONLY)
            for b in share:
                os.pread(fd, BLOCK, b * BLOCK)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return time.perf_counter() - started


def read_with_window(fd: int, blocks: list[int], window: int) -> float:
    """Wall seconds to pread `blocks` in order, `window` of them requested ahead."""
    started = time.perf_counter()
    requested = 0
    for i, b in enumerate(blocks):
        while requested < len(blocks) and requested <= i + window - 1 and window > 1:
            os.posix_fadvise(fd, blocks[requested] * BLOCK, BLOCK, os.POSIX_FADV_WILLNEED)
            requested += 1
        os.pread(fd, BLOCK, b * BLOCK)
    return time.perf_counter() - started


def read_in_hops(fd: int, blocks: list[int], hop: int) -> float:
    """Wall seconds to read `blocks` `hop` at a time, each hop requested all at once."""
    started = time.perf_counter()
    for start in range(0, len(blocks), hop):
        batch = blocks[start:start + hop]
        for b in batch[1:]:
            os.posix_fadvise(fd, b * BLOCK, BLOCK, os.POSIX_FADV_WILLNEED)
        for b in batch:
            os.pread(fd, BLOCK, b * BLOCK)
    return time.perf_counter() - started


def disk_read_bytes() -> int:
    """Bytes this process has had read from storage (its own reads and its read-ahead)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def read_lists(fd: int, lists: list[tuple[int, int]], run_blocks: int,
               window: int) -> tuple[float, float, int]:
    """Reads each (first block, blocks) range in order, 8 kB at a time, as an ivfflat probe
    reads its lists. run_blocks = 0: plain reads, which the kernel's read-ahead follows (and
    overshoots at each list's end); else WILLNEED runs of run_blocks blocks, `window` runs
    ahead of the reader and across list ends. Returns wall seconds, CPU seconds and bytes
    read from disk."""
    runs = [(b, min(run_blocks, first + n - b)) for first, n in lists
            for b in range(first, first + n, max(run_blocks, 1))] if run_blocks else []
    cpu, disk = time.process_time(), disk_read_bytes()
    started = time.perf_counter()
    hinted = done = 0
    for first, n in lists:
        for b in range(first, first + n):
            while hinted < len(runs) and hinted < done + window:
                run_first, count = runs[hinted]
                os.posix_fadvise(fd, run_first * BLOCK, count * BLOCK, os.POSIX_FADV_WILLNEED)
                hinted += 1
            os.pread(fd, BLOCK, b * BLOCK)
            if done < len(runs) and b + 1 >= runs[done][0] + runs[done][1]:
                done += 1
    return (time.perf_counter() - started, time.process_time() - cpu,
            disk_read_bytes() - disk)


def list_reads(path: Path, nblocks: int, args: argparse.Namespace) -> None:
    """The --lists table: MB/s of an ivfflat-like probe, plain against hinted runs."""
    fd = os.open(path, os.O_RDONLY)
    list_blocks = args.list_mb * 2**20 // BLOCK
    print(f"# {args.lists} lists of {args.list_mb} MB read 8 kB at a time on {args.dir} "
          f"({time.strftime('%Y-%m-%d %H:%M')})\n")
    print("| reads | MB/s | CPU ms per probe | disk bytes ÷ list bytes |")
    print("|---|---:|---:|---:|")
    settings = [("plain (kernel read-ahead)", 0, 0)] + [
        (f"WILLNEED runs of {r * BLOCK // 1024} kB, {w} ahead", r, w)
        for r, w in (tuple(int(x) for x in rw.split("x")) for rw in args.runs.split(","))]
    for name, run_blocks, window in settings:
        samples = []
        for rep in range(args.repeat):
            rng = random.Random(rep)
            lists = [(rng.randrange(nblocks - list_blocks), list_blocks) for _ in range(args.lists)]
            drop_from_cache(fd)
            samples.append(read_lists(fd, lists, run_blocks, window))
        wall, cpu, disk = (statistics.median(x) for x in zip(*samples))
        total = args.lists * list_blocks * BLOCK
        print(f"| {name} | {total / wall / 1e6:.0f} | {cpu * 1e3:.0f} | {disk / total:.2f} |")
    os.close(fd)


def scratch_file(directory: Path, mb: int) -> Path:
    path = directory / f"disk_limit-{mb}MB.scratch"
    if not path.exists() or path.stat().st_size != mb * 2**20:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(os.urandom(2**20))
            f.flush()
            os.fsync(f.fileno())
    return path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", type=Path, default=Path("/tmp/am-tests/bench"),
                   help="where the scratch file goes (the benchmark's disk)")
    p.add_argument("--mb", type=int, default=512, help="scratch file size")
    p.add_argument("--reads", type=int, default=2000, help="random reads per measurement")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--processes", default="1,2,4,8,16,32")
    p.add_argument("--windows", default="1,2,4,8,16,32")
    p.add_argument("--hop-reads", type=int, default=8)
    p.add_argument("--lists", type=int, default=0,
                   help="instead: read this many contiguous lists, as an ivfflat probe does")
    p.add_argument("--list-mb", type=int, default=6, help="size of each list (--lists)")
    p.add_argument("--runs", default="16x16,64x16,128x8,512x2",
                   help="WILLNEED settings for --lists: blocks per run x runs ahead")
    args = p.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    path = scratch_file(args.dir, args.mb)
    nblocks = args.mb * 2**20 // BLOCK
    if args.lists:
        list_reads(path, nblocks, args)
        return 0
    fd = os.open(path, os.O_RDONLY)
    results: dict[str, float] = {}
    settings = [("processes", int(x)) for x in args.processes.split(",")] + \
               [("window", int(x)) for x in args.windows.split(",")] + \
               [("hops", args.hop_reads)]
    for kind, n in settings:
        samples = []
        for rep in range(args.repeat):
            blocks = blocks_to_read(nblocks, args.reads, hash((kind, n, rep)) & 0xFFFF)
            drop_from_cache(fd)
            if kind == "processes":
                seconds = read_in_processes(path, blocks, n)
            elif kind == "window":
                seconds = read_with_window(fd, blocks, n)
            else:
                seconds = read_in_hops(fd, blocks, n)
            samples.append(seconds / len(blocks) * 1e6)
        results[f"{kind} {n}"] = statistics.median(samples)
        print(f"{kind} {n}: {results[f'{kind} {n}']:.1f} us per read "
              f"({', '.join(f'{s:.1f}' for s in samples)})", file=sys.stderr)
    single = results["processes 1"]
    hop = results[f"hops {args.hop_reads}"]
    best = min(results.values())
    print(f"# Random 8 kB reads on {args.dir} ({time.strftime('%Y-%m-%d %H:%M')})\n")
    print("| reads in flight | µs per read, P processes | µs per read, one process with a "
          "WILLNEED window |")
    print("|---:|---:|---:|")
    for n in sorted({n for _, n in settings}):
        cells = [f"{results[k]:.1f}" if (k := f"{kind} {n}") in results else "–"
                 for kind in ("processes", "window")]
        print(f"| {n} | {cells[0]} | {cells[1]} |")
    print(f"\nOne read at a time: {single:.1f} µs; best with reads in flight: {best:.1f} µs. "
          f"Overlapped ÷ serial cannot go below {best / single:.2f} for the same reads.\n\n"
          f"In hops of {args.hop_reads} reads requested together: {hop:.1f} µs per read, "
          f"{hop * args.hop_reads:.0f} µs per hop; ÷ one read at a time: {hop / single:.2f} "
          "(a walk that overlaps each hop's reads, and nothing across hops).")
    os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
