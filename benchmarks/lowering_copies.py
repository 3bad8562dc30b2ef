#!/usr/bin/env python3
"""One lowering's CPU seconds when 1, 4, 8, ... copies run at once (issue 47: why a trace job costs more CPU when
16 run on the lent machine's 16 cores). The book's 1024^3 GEMM (workflow/kernels/gemm.py) is lowered for
cuda-sm90 as a trace job lowers it: TileLang imported once, then children forked, as a trace batch forks its jobs.
All children of a round start together (a pipe they wait on) and each lowers REPEATS times; each lowering's
process CPU seconds (every thread of the child) and wall seconds are printed as one JSON line per child.

    python3 benchmarks/lowering_copies.py --copies 1 4 8 16 --repeats 3 > copies.jsonl

The summary line of each round (stderr) gives the median CPU seconds of the lowerings after each child's first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GEMM = REPO / "workflow" / "kernels" / "gemm.py"


def _gemm_primfunc():
    spec = importlib.util.spec_from_file_location("book_gemm", GEMM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(M=1024, N=1024, K=1024)


def _child(func, target, repeats: int, start_fd: int, out_fd: int) -> None:
    import tilelang

    os.read(start_fd, 1)  # every child of the round starts when the parent closes the pipe
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        with target:
            tilelang.lower(func, target=target)
        cpu.append(round(time.process_time() - c0, 4))
        wall.append(round(time.perf_counter() - w0, 4))
    os.write(out_fd, (json.dumps({"cpu_s": cpu, "wall_s": wall}) + "\n").encode())


def run_round(func, target, copies: int, repeats: int) -> list[dict]:
    start_r, start_w = os.pipe()
    out_r, out_w = os.pipe()
    children = []
    for _ in range(copies):
        pid = os.fork()
        if pid == 0:
            os.close(start_w)
            os.close(out_r)
            try:
                _child(func, target, repeats, start_r, out_w)
            finally:
                os._exit(0)
        children.append(pid)
    os.close(start_r)
    os.close(out_w)
    began = time.perf_counter()
    os.close(start_w)  # go
    with os.fdopen(out_r) as results:
        rows = [json.loads(line) for line in results]
    for pid in children:
        os.waitpid(pid, 0)
    round_wall = time.perf_counter() - began
    return [row | {"copies": copies, "child": i, "round_wall_s": round(round_wall, 3)} for i, row in enumerate(rows)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import tilelang  # noqa: F401 - imported once, before the children are forked (as a trace batch does)
    from tilelang import tvm

    func = _gemm_primfunc()
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    print(json.dumps({"cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))}), flush=True)
    for copies in args.copies:
        rows = run_round(func, target, copies, args.repeats)
        for row in rows:
            print(json.dumps(row), flush=True)
        later = [c for row in rows for c in row["cpu_s"][1:]] or [row["cpu_s"][0] for row in rows]
        first = [row["cpu_s"][0] for row in rows]
        print(
            f"{copies:2d} copies: lowering CPU median {statistics.median(later):.3f} s (first of each child "
            f"{statistics.median(first):.3f} s), round wall {rows[0]['round_wall_s']:.2f} s",
            file=sys.stderr,
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
