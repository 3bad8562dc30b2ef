#!/usr/bin/env python3
"""The GPU stage's rules, run in their order without Snakemake, for a GPU machine that has no Snakemake (the
borrowed H200 machine: nothing can be installed there but carried wheels, and Snakemake's do not fit beside
TileLang's in one command's 64 MiB). Each step runs the command line the rule runs (the same entry scripts).

    # here, where Snakemake is: the plan of a config (the jobs the rules would run), for one CUDA target
    python3 benchmarks/gpu_stage.py plan --target cuda-sm90 [--configfile FILE] [--config-json JSON] > plan.json
    # there: trace jobs (mode instrument) -> churn_table -> gpu_device -> gpu_bench jobs -> kernel_speed ->
    # speed_figures, with --jobs processes at a time; prints each step's wall time
    python3 benchmarks/gpu_stage.py run --plan plan.json --jobs 16 --results results

``run`` writes ``results/gpu/stage_times.json``: the wall time of each step and of the GPU stage (gpu_device to
speed_figures, compile included), the goal of `make bench` on the H200 machine being under 2 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))


def plan(args) -> int:
    import yaml
    from tilelang_churn.gpu import gpu_bench
    from tilelang_churn.grid import config_checks, job_grid

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for extra in args.configfile or []:
        cfg.update(yaml.safe_load(Path(extra).read_text()))
    cfg.update(json.loads(args.config_json or "{}"))
    cfg["targets"] = [args.target]
    cfg["modes"] = [args.mode]
    grid = job_grid.build_grid(config_checks.validate_config(cfg))
    trace = [
        {
            "args": _without_release_env(job.args),
            "out": "runs/{version}/{target}/{shape}/{mode}".format(**job.wildcards),
        }
        for job in grid.jobs.values()
    ]
    site = ["--site", args.gpu_site] if args.gpu_site else []
    gpu = [
        {"args": [*arguments, *site], "out": f"gpu/runs/{version}/{target}/{shape}/speed.json"}
        for (version, target, shape), arguments in gpu_bench.gpu_jobs(grid).items()
    ]
    json.dump({"mode": args.mode, "kernels": gpu_bench.kernel_names(grid), "trace": trace, "gpu": gpu}, sys.stdout)
    return 0


def _without_release_env(args) -> list[str]:
    """A job's arguments without --release-env DIR: there the release is the one on PYTHONPATH."""
    args = list(args)
    if "--release-env" in args:
        i = args.index("--release-env")
        del args[i : i + 2]
    return args


def _run_all(commands: list[tuple[list[str], Path]], jobs: int, env: dict | None = None) -> list[int]:
    def one(item):
        command, log = item
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as handle:
            return subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, commands))


def run(args) -> int:
    data = json.loads(Path(args.plan).read_text())
    results, py = Path(args.results), sys.executable
    times = {}
    trace_env = {**os.environ, "PYTHONPATH": args.trace_pythonpath} if args.trace_pythonpath else None

    def step(name, function):
        start = time.perf_counter()
        status = function()
        times[name] = round(time.perf_counter() - start, 2)
        print(f"step {name}: {times[name]} s, status {status}", flush=True)
        return status

    def traces():
        commands = [
            ([py, str(SCRIPTS / "gemm_lower_trace.py"), *job["args"], "--out", str(results / job["out"])],
             results / "logs" / job["out"] / "trace.log")
            for job in data["trace"]
        ]  # fmt: skip
        return max(_run_all(commands, args.jobs, trace_env), default=0)

    passes = [str(results / job["out"] / "passes.csv") for job in data["trace"]]
    churn = [py, str(SCRIPTS / "churn_table.py"), "--out", str(results / "churn.csv")]
    churn += ["--summary", str(results / "churn_summary.csv"), *passes]
    probe = [py, str(SCRIPTS / "gpu_bench.py"), "--probe", "--out", str(results / "gpu" / "device.json")]

    def benches():
        commands = [
            ([py, str(SCRIPTS / "gpu_bench.py"), *job["args"], "--out", str(results / job["out"])],
             results / "logs" / job["out"].replace("speed.json", "bench.log"))
            for job in data["gpu"]
        ]  # fmt: skip
        return max(_run_all(commands, args.jobs), default=0)

    speed = [str(results / job["out"]) for job in data["gpu"]]
    tables = [py, str(SCRIPTS / "kernel_speed.py"), "--summary", str(results / "churn_summary.csv")]
    tables += ["--mode", data["mode"], "--speed", str(results / "gpu" / "kernel_speed.csv")]
    tables += ["--joined", str(results / "gpu" / "churn_vs_speed.csv"), *speed]
    figures = [py, str(SCRIPTS / "speed_figures.py"), "--joined", str(results / "gpu" / "churn_vs_speed.csv")]
    figures += ["--out-dir", str(results / "gpu" / "figures"), "--kernels", ",".join(data["kernels"])]

    status = step("trace (CPU part)", traces)
    status = status or step("churn_table", lambda: subprocess.run(churn, env=trace_env).returncode)
    gpu_start = time.perf_counter()
    for name, command in (("gpu_device", probe),):
        status = status or step(name, lambda command=command: subprocess.run(command).returncode)
    status = status or step("gpu_bench (all jobs)", benches)
    status = status or step("kernel_speed", lambda: subprocess.run(tables).returncode)
    status = status or step("speed_figures", lambda: subprocess.run(figures).returncode)
    times["gpu_stage"] = round(time.perf_counter() - gpu_start, 2)
    times["gpu_jobs"] = len(data["gpu"])
    times["parallel_jobs"] = args.jobs
    (results / "gpu").mkdir(parents=True, exist_ok=True)
    (results / "gpu" / "stage_times.json").write_text(json.dumps(times, indent=2) + "\n")
    print(f"GPU stage (gpu_device .. speed_figures): {times['gpu_stage']} s for {len(data['gpu'])} jobs", flush=True)
    return status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_stage.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--target", default="cuda-sm90")
    p.add_argument("--mode", default="instrument")
    p.add_argument("--configfile", action="append")
    p.add_argument("--config-json")
    p.add_argument("--gpu-site", help="a release's GPU site for the GPU jobs (gpu_bench.py --site), as the rule passes")
    r = sub.add_parser("run")
    r.add_argument("--plan", required=True)
    r.add_argument("--jobs", type=int, default=16)
    r.add_argument("--results", default="results")
    r.add_argument("--trace-pythonpath", help="PYTHONPATH of the trace jobs alone (the release for the CPU part)")
    args = parser.parse_args(argv)
    return plan(args) if args.command == "plan" else run(args)


if __name__ == "__main__":
    sys.exit(main())
