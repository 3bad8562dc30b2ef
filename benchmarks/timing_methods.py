"""The GPU stage's timing methods side by side on the same compiled kernels (issue 57), on a machine with a GPU:

    python3 benchmarks/timing_methods.py --trials 5 > timing_methods.jsonl

One JSON line per kernel, method and trial: the stage's time_launches (a replayed CUDA graph; the L2 flushed before
each repeat or not; the warm-up and repeats given; the GPU held busy while the host queues a repeat or not) and
TileLang's do_bench, in one process, one after the other. Each trial makes its inputs anew, as each GPU job does:
methods differ within a trial, allocations between trials. With --busy-cpus N, N processes spin meanwhile, as
the stage's compiles do beside a timing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time

from tilelang_churn.gpu import gpu_bench
from tilelang_churn.trace import trace_cli

KERNELS = {
    "gemm_4096": ["--shape", "4096,4096,4096", "--block", "128,256,64", "--threads", "256"],
    "gemm_1024": ["--shape", "1024,1024,1024"],
    "rmsnorm_1152": ["--kernel", "rmsnorm", "--params", '{"N": 1152}'],
    "rmsnorm_1gb": ["--kernel", "rmsnorm", "--params", '{"M": 65536, "N": 4096}'],
    "attention_causal": ["--kernel", "flash_attention", "--params", '{"is_causal": true}'],
}
METHODS = {  # name -> time_launches keywords
    "graph_flush_7": {"repeats": 7, "flush_l2": True},
    "graph_noflush_7": {"repeats": 7, "flush_l2": False},
    "graph_flush_7_warm500": {"repeats": 7, "flush_l2": True, "warmup_ms": 500.0},
    "graph_flush_25": {"repeats": 25, "flush_l2": True},
    "graph_flush_7_nohold": {"repeats": 7, "flush_l2": True, "hold_ms": 0.0},
    "graph_flush_7_hold10": {"repeats": 7, "flush_l2": True, "hold_ms": 10.0},
}


def _spin() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--busy-cpus", type=int, default=0, help="processes that spin while the kernels are timed")
    args = parser.parse_args()
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy_cpus)]
    for spinner in spinners:
        spinner.start()
    device = gpu_bench.probe_device()
    arch = json.dumps({"kind": "cuda", "arch": device["gpu_arch"]})
    for name in args.kernels.split(","):
        spec = trace_cli.parse_lowering([*KERNELS[name], "--target", arch])
        io = gpu_bench.kernel_io(spec)
        kernel = gpu_bench.compile_kernel(io, spec)
        import torch

        for trial in range(args.trials):
            torch.manual_seed(0)
            inputs = io.inputs("cuda")

            def launch(kernel=kernel, inputs=inputs):
                return kernel(*inputs)

            for method, keywords in METHODS.items():
                started = time.perf_counter()
                times, how = gpu_bench.time_launches(launch, **keywords)
                summary = gpu_bench.summarize_times(times)
                print(json.dumps({"kernel": name, "trial": trial, "method": method, "how": how,
                                  "median_ms": summary["median"], "spread": summary["spread"],
                                  "seconds": round(time.perf_counter() - started, 3)}), flush=True)  # fmt: skip
            started = time.perf_counter()
            ms, backend = gpu_bench.tilelang_do_bench(launch)
            print(json.dumps({"kernel": name, "trial": trial, "method": f"do_bench_{backend}", "median_ms": ms,
                              "seconds": round(time.perf_counter() - started, 3)}), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
