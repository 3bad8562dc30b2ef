"""The GPU stage on a machine without a GPU (CI): the join, the figures from a speed table recorded on an H200,
the schemas of the new tables, the GPU job list of a grid, and `gpu: true` where no CUDA device is visible.

The recorded tables (tests/data/gpu/, tests/data/gpu/PROVENANCE.md says where and how they were measured) are
inputs here, never expected numbers: the tests recompute from them and compare the results with each other.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, make_workdir, require_tilelang, snakemake
from tilelang_churn.core import passes_table, statuses
from tilelang_churn.figures import speed_figures
from tilelang_churn.gpu import gpu_bench, gpu_clock, gpu_site
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.kernel import kernels
from tilelang_churn.tables import kernel_speed
from tilelang_churn.trace import trace_cli

DATA = REPO / "tests" / "data" / "gpu"
SPEED = DATA / "kernel_speed_h200.csv"
SUMMARY = DATA / "churn_summary_h200.csv"
README = REPO / "docs" / "outputs-gpu.md"
NO_DEVICE_LINE = re.compile(r"^gpu stage: config gpu: true needs a CUDA device, and none is visible here \(.+\);")


def _header(path: Path) -> list[str]:
    with open(path, newline="") as handle:
        return next(csv.reader(handle))


def test_the_recorded_tables_have_the_schema_of_the_stage():
    for name in ("kernel_speed_h200.csv", "kernel_speed_h200_4096.csv"):  # recorded before pass_configs
        later = (*passes_table.ADDED_COLUMNS, *kernel_speed.LATER_SPEED_COLUMNS)
        assert _header(DATA / name) == [c for c in kernel_speed.SPEED_COLUMNS if c not in later]
    before_device = [c for c in kernel_speed.SPEED_COLUMNS if c != "device"]  # every recorded table
    issue_57 = [c for c in before_device if c not in gpu_clock.CLOCK_COLUMNS]  # recorded before them
    assert _header(DATA / "kernel_speed_h200_examples_0.1.13_checked.csv") == issue_57
    assert _header(DATA / "kernel_speed_h100_examples_clock.csv") == before_device
    # a GPU row carries passes_table's provenance (without mode and source) and the machine's
    assert gpu_bench.ROW_PROVENANCE == list(kernel_speed.SPEED_COLUMNS[: len(gpu_bench.ROW_PROVENANCE)])
    # every provenance column but the trace mode's reaches the row (pass_configs: the table's last column)
    assert set(gpu_bench.ROW_JOB_COLUMNS) == set(passes_table.PROVENANCE_COLUMNS) - {"mode", "source"}
    assert set(gpu_bench.ROW_JOB_COLUMNS) <= set(kernel_speed.SPEED_COLUMNS)
    assert set(gpu_bench.DEVICE_COLUMNS) <= set(kernel_speed.SPEED_COLUMNS)
    rows = kernel_speed.read_csv(SPEED)
    assert {row["status"] for row in rows} <= set(gpu_bench.STATUSES)
    for row in rows:
        assert row["gpu_name"] and row["driver_version"] and row["torch_version"] and row["measured_by"]


def test_every_new_column_is_documented_in_config_readme_as_the_schema_says():
    section = README.read_text()
    speed = section[section.index("## kernel_speed.csv") : section.index("## churn_vs_speed.csv")]
    joined = section[section.index("## churn_vs_speed.csv") :]
    rows = re.compile(r"^\| `([A-Za-z_]+)` \| (.*) \|$", re.M)
    assert rows.findall(speed) == kernel_speed.SPEED_SCHEMA
    assert rows.findall(joined) == kernel_speed.JOINED_SCHEMA[len(kernel_speed.SPEED_SCHEMA) :]


def test_the_join_pairs_every_gpu_row_with_the_trace_job_of_its_release_target_and_params(tmp_path):
    speed, summary = kernel_speed.read_csv(SPEED), kernel_speed.read_csv(SUMMARY)
    joined = kernel_speed.join(speed, summary, "instrument")
    assert len(joined) == len(speed)
    for row, gpu_row in zip(joined, speed):
        assert {key: row[key] for key in kernel_speed.SPEED_COLUMNS} == gpu_row
        (match,) = [
            s
            for s in summary
            if (s["tilelang_version"], s["target_name"], s["kernel"], s["params"], s["mode"])
            == (row["tilelang_version"], row["target_name"], row["kernel"], row["params"], "instrument")
        ]
        assert row["churn_total"] == match["churn_total"] == match["added_total"] + match["deleted_total"]
        assert row["lowered"] is (match["failed_steps"] == 0)
    # another mode, a job the grid lacks, a failed lowering: empty churn, or lowered False
    assert all(row["lowered"] is None and row["churn_total"] is None for row in kernel_speed.join(speed, summary, "x"))
    failed = [dict(s, failed_steps=1) for s in summary]
    assert {row["lowered"] for row in kernel_speed.join(speed, failed, "instrument")} == {False}
    # the command line writes the same rows (the joined table read back equals the join in memory)
    out = kernel_speed.join(speed, summary, "instrument")
    kernel_speed.write_csv(tmp_path / "joined.csv", out, kernel_speed.JOINED_COLUMNS)
    assert _header(tmp_path / "joined.csv") == kernel_speed.JOINED_COLUMNS
    assert kernel_speed.read_csv(tmp_path / "joined.csv") == [
        {key: row.get(key) for key in kernel_speed.JOINED_COLUMNS} for row in out
    ]


def test_the_figures_from_the_recorded_h200_table_are_drawn_and_reproducible(tmp_path):
    joined = kernel_speed.join(kernel_speed.read_csv(SPEED), kernel_speed.read_csv(SUMMARY), "instrument")
    kernel_speed.write_csv(tmp_path / "churn_vs_speed.csv", joined, kernel_speed.JOINED_COLUMNS)
    names = ["gemm", "flash_attention", "rmsnorm", "not_in_the_table"]
    for out in ("a", "b"):
        speed_figures.build(tmp_path / "churn_vs_speed.csv", tmp_path / out, names, ("png", "svg"))
    for name in names:
        for ext in ("png", "svg"):
            first, second = (tmp_path / out / f"{name}.{ext}" for out in ("a", "b"))
            assert first.stat().st_size > 5000
            assert first.read_bytes() == second.read_bytes(), f"{name}.{ext} differs between two runs"
    # every configuration gets a label that tells it from the kernel's others
    gemm = [row for row in joined if row["kernel"] == "gemm"]
    labels = speed_figures.short_labels(gemm)
    assert len(set(labels.values())) == len({speed_figures.configuration(r) for r in gemm})


def test_a_failed_row_is_drawn_as_data(tmp_path):
    rows = kernel_speed.join(kernel_speed.read_csv(SPEED), kernel_speed.read_csv(SUMMARY), "instrument")
    rows[0] |= {"status": gpu_bench.STATUS_COMPILE_FAILED, "compiled": False, "latency_ms": None}
    speed_figures.plot_kernel(rows, rows[0]["kernel"], [tmp_path / "f.svg"])
    assert "compile_failed" in (tmp_path / "f.svg").read_text()


def _drawn(rows: list[dict], kernel: str, path: Path):
    """The figure plot_kernel draws (kept open for the test to read), saved to path as the stage saves it."""
    drawn = []
    original = speed_figures.fs.save
    speed_figures.fs.save = lambda fig, paths: drawn.append(fig) or original(fig, paths)
    try:
        speed_figures.plot_kernel(rows, kernel, [path])
    finally:
        speed_figures.fs.save = original
    return drawn[0]


def test_a_row_timed_under_the_power_cap_is_a_hollow_marker_the_legend_explains(tmp_path):
    """The H100's own reading (kernel_speed_h100_examples_clock.csv: the persistent GEMMs under sw_power_cap,
    RMSNorm under none) given to rows of the recorded H200 table: the capped row is drawn hollow, the legend says
    what hollow means, and a table without a capped row draws as before."""
    import matplotlib.pyplot as plt

    recorded = {
        row["kernel"]: row["clock_limits"]
        for row in kernel_speed.read_csv(DATA / "kernel_speed_h100_examples_clock.csv")
    }
    capped, free = recorded["gemm_example_gemm_persistent.matmul_persistent"], recorded["norm_rms_norm"]
    assert (capped, free) == ("sw_power_cap", "none")
    rows = kernel_speed.join(kernel_speed.read_csv(SPEED), kernel_speed.read_csv(SUMMARY), "instrument")
    gemm = [row | {"clock_limits": free} for row in rows if row["kernel"] == "gemm" and row["latency_ms"]]
    gemm[0] = gemm[0] | {"clock_limits": capped}
    fig = _drawn(gemm, "gemm", tmp_path / "capped.png")
    hollow = [c for c in fig.axes[0].collections if len(c.get_facecolors()) == 0]  # no face: hollow
    assert len(hollow) == 1 and tuple(hollow[0].get_offsets()[0]) == (gemm[0]["churn_total"], gemm[0]["latency_ms"])
    legend = [text.get_text() for text in fig.axes[3].get_legend().get_texts()]
    assert speed_figures.HELD_DOWN in legend
    plt.close(fig)
    fig = _drawn([row | {"clock_limits": free} for row in gemm], "gemm", tmp_path / "free.png")
    assert speed_figures.HELD_DOWN not in [text.get_text() for text in fig.axes[3].get_legend().get_texts()]
    assert all(len(c.get_facecolors()) for c in fig.axes[0].collections)
    plt.close(fig)


def test_a_kernel_with_one_configuration_none_timed_is_drawn_readably(tmp_path):
    """On the H200, one of TileLang's examples with a single configuration, not timed: its churn ticks were
    2139.00, 2139.25, ... printed over each other, and its latency panels a linear scale around nothing under a
    'log scale' label. Ticks are whole lines now, and a panel with nothing timed says so."""
    import matplotlib.pyplot as plt

    rows = kernel_speed.join(kernel_speed.read_csv(SPEED), kernel_speed.read_csv(SUMMARY), "instrument")
    (one,) = [row for row in rows if row["kernel"] == "gemm"][:1]
    one = one | {"status": gpu_bench.STATUS_LAUNCH_FAILED, "latency_ms": None}
    fig = _drawn([one], "gemm", tmp_path / "f.png")
    scatter, by_release = fig.axes[0], fig.axes[1]
    ticks = [tick for tick in scatter.get_xticks() if scatter.get_xlim()[0] <= tick <= scatter.get_xlim()[1]]
    assert ticks and all(float(tick).is_integer() for tick in ticks) and len(ticks) <= 6, ticks
    for ax in (scatter, by_release):
        assert "not timed (launch_failed)" in [text.get_text() for text in ax.texts]
        assert list(ax.get_yticks()) == []
    plt.close(fig)


def test_the_gpu_jobs_of_a_grid_are_its_cuda_configurations_of_the_gpus_arch():
    import yaml

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    grid = job_grid.build_grid(config_checks.validate_config(cfg))
    every = gpu_bench.gpu_jobs(grid)
    on_h200 = gpu_bench.gpu_jobs(grid, "sm_90")
    assert {target for _, target, _ in every} == {"cuda-sm80", "cuda-sm90"}
    assert {target for _, target, _ in on_h200} == {"cuda-sm90"}
    assert len(on_h200) == len(grid.versions) * len(grid.configurations)
    assert gpu_bench.kernel_names(grid) == ["gemm", "flash_attention", "rmsnorm"]
    assert gpu_bench.arch_matches({"kind": "cuda", "arch": "sm_90a"}, "sm_90")
    assert not gpu_bench.arch_matches({"kind": "hip", "arch": "sm_90"}, "sm_90")


def test_the_shipped_kernels_define_every_gpu_hook():
    for name in kernels.shipped_names():
        hooks = kernels.gpu_hooks(kernels.load_module(kernels.shipped(name)))
        assert hooks.inputs and hooks.reference and hooks.work, name
        params = kernels.read_signature(kernels.shipped(name)).defaults()
        if name == "gemm":
            params |= {"M": 64, "N": 32, "K": 16}
        assert set(hooks.work(params)) <= {"flops", "bytes"}


def test_no_cuda_device_is_one_line_naming_the_device_and_the_key(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gpu_bench.py"), "--probe", "--out", str(tmp_path / "device.json")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == gpu_bench.EXIT_NO_DEVICE
    assert NO_DEVICE_LINE.match(proc.stderr) and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "device.json").exists()


TINY = """
shapes:
  - {M: 128, N: 128, K: 128, block: [64, 64, 32]}
targets: [cuda-sm90]
modes: [instrument]
kernels: []
job_figures: false
heatmap_formats: [png]
"""  # the book's reference (1024^3) is not in the grid: no book figures (the device is what this grid is for)


@pytest.fixture(scope="module")
def no_gpu_run(tmp_path_factory):
    """`snakemake --keep-going --config gpu=true` of a one-job grid where no CUDA device is visible."""
    require_tilelang()
    workdir = make_workdir(tmp_path_factory.mktemp("no_gpu"))
    (workdir / "config" / "tiny.yaml").write_text(TINY)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    args = ("--cores", "2", "--keep-going", "--configfile", "config/tiny.yaml", "--config", "gpu=true")
    return workdir, snakemake(workdir, *args, env=env)


@pytest.mark.slow
def test_gpu_true_without_a_device_stops_in_one_line_and_keeps_every_cpu_result(no_gpu_run):
    workdir, proc = no_gpu_run
    assert proc.returncode != 0
    said = [line for line in proc.stderr.splitlines() if NO_DEVICE_LINE.match(line)]
    assert len(said) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    for path in ("churn.csv", "churn_summary.csv", "figures/churn_heatmap.png", "static/static_check.txt"):
        assert (workdir / "results" / path).is_file(), path
    assert not (workdir / "results" / "gpu" / "kernel_speed.csv").exists()
    assert NO_DEVICE_LINE.match((workdir / "logs" / "gpu" / "device.log").read_text())


def test_the_kernel_speed_command_line_writes_the_recorded_table_and_its_join(tmp_path):
    # each recorded row as the speed.json a GPU job writes; the command line must give back the same table
    rows, jsons = kernel_speed.read_csv(SPEED), []
    for number, row in enumerate(rows):
        path = tmp_path / f"job{number}" / "speed.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"row": row}))
        jsons.append(str(path))
    speed, joined = tmp_path / "out" / "kernel_speed.csv", tmp_path / "out" / "churn_vs_speed.csv"
    command = [sys.executable, str(REPO / "scripts" / "kernel_speed.py"), "--summary", str(SUMMARY)]
    command += ["--mode", "instrument", "--speed", str(speed), "--joined", str(joined), *jsons]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # the recorded table with the column added since (passes_table.ADDED_COLUMNS), as its reader fills it in
    assert kernel_speed.read_csv(speed) == rows and _header(speed) == kernel_speed.SPEED_COLUMNS
    expected = kernel_speed.join(rows, kernel_speed.read_csv(SUMMARY), "instrument")
    assert kernel_speed.read_csv(joined) == [
        {key: row.get(key) for key in kernel_speed.JOINED_COLUMNS} for row in expected
    ]
    matched = sum(row["lowered"] is not None for row in expected)
    assert proc.stdout == (
        f"kernel_speed: {len(rows)} GPU jobs -> {speed}; {matched} joined with instrument churn -> {joined}\n"
    )


def test_a_sites_requirements_are_those_that_apply_here_and_are_not_met(tmp_path):
    import importlib.metadata

    have = importlib.metadata.version("packaging")  # installed here: met at this version, not at another
    metadata = "\n".join(
        [
            "Metadata-Version: 2.1",
            "Name: tilelang",
            "Requires-Dist: Torch>=2.1",  # skipped: the GPU machine's own CUDA build
            "Requires-Dist: apache_tvm_ffi==0.1.9",  # skipped: a pin of the release, installed beside
            f"Requires-Dist: packaging=={have}",  # met by what the running Python has
            f"Requires-Dist: packaging!={have}",  # not met: installed
            "Requires-Dist: tlchurn-absent-one>=1.2; python_version >= '3'",  # applies: installed
            "Requires-Dist: TLChurn_Absent_One[fast]>=2",  # the same name again: the first is kept
            "Requires-Dist: tlchurn-absent-two; sys_platform == 'no-such-platform'",  # marker false here
            "Requires-Dist: tlchurn-absent-three; extra == 'dev'",  # an extra: left out
            "",
            "The description, which has no requirements.",
        ]
    )
    skip = {"torch", "apache-tvm-ffi"}
    assert gpu_site.site_requirements(metadata, skip) == [f"packaging!={have}", "tlchurn-absent-one>=1.2"]
    # the installed TileLang's own METADATA: this venv has every requirement, so a site here needs none
    installed = importlib.metadata.distribution("tilelang").read_text("METADATA")
    assert "Requires-Dist:" in installed
    assert gpu_site.site_requirements(installed, set(gpu_site.SKIPPED)) == []


FAKE_DEVICE = {"gpu_name": "no GPU: a test's description", "gpu_arch": "sm_90", "driver_version": "0"}


@pytest.mark.parametrize(
    "ending, status, said",
    [
        ("hang", "timeout", "ran past 1 s on the GPU (config gpu_timeout_s)"),
        ("segfault", "crashed", "killed by SIGSEGV (signal 11)"),
        ("exit", "crashed", "ended (exit status 0) without its result"),
    ],
)
def test_a_gpu_job_that_never_ends_or_dies_is_a_row_and_the_stage_goes_on(tmp_path, monkeypatch, ending, status, said):
    """On the H200 a kernel of TileLang's own examples never finished and held the GPU's lock: every GPU job behind it
    waited until the command's limit. The job's work runs in a child; its end by the GPU time limit or by a signal
    is the job's row. Here run_job (in the child only) arms the limit as run_job does once it holds the GPU, then
    never finishes, segfaults or exits without its row."""
    import faulthandler
    import signal
    import time

    def run_job(spec, device, repeats, launches, cache_dir=None, gpu_seconds=None, **_):
        if ending == "hang":
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(int(gpu_seconds))
            time.sleep(30)
        if ending == "segfault":
            faulthandler.disable()  # pytest's dump of the child's stack is no part of the test
            os.kill(os.getpid(), signal.SIGSEGV)
        os._exit(0)

    monkeypatch.setattr(gpu_bench, "_visible_device", lambda log: FAKE_DEVICE)
    monkeypatch.setattr(gpu_bench, "run_job", run_job)
    out = tmp_path / "speed.json"
    started = time.perf_counter()
    args = ["--shape", "256,256,256", "--target", "cuda-sm90"]
    assert gpu_bench.bench_job(args, out, None, 1, 1, ["test"], gpu_seconds=1) == 0
    assert time.perf_counter() - started < 20
    record = json.loads(out.read_text())
    row = record["row"]
    assert row["status"] == status and said in row["error"], row
    assert (row["M"], row["target_name"], row["gpu_name"]) == (256, "cuda-sm90", FAKE_DEVICE["gpu_name"])
    assert record["device"] == FAKE_DEVICE
    assert not list(tmp_path.glob("*.child"))
    assert status in statuses.SPEED_STATUSES


def test_a_config_reference_gets_the_kernels_parameters_it_names_as_the_examples_call_theirs():
    """TileLang's examples call ref_program(Q, K, V, is_causal) and ref_program(x, w, b, eps): called with the inputs
    alone, 14 of 55 examples failed on the H200 at their reference (missing 'is_causal', 'eps', ...)."""
    seen = {}

    def ref_program(q, k, v, is_causal, eps=1e-5, unknown=None):
        seen.update(q=q, k=k, v=v, is_causal=is_causal, eps=eps, unknown=unknown)
        return q

    params = {"is_causal": True, "eps": 0.5, "block_M": 64}
    assert gpu_bench.call_reference(ref_program, params, ["Q", "K", "V"]) == "Q"
    assert seen == {"q": "Q", "k": "K", "v": "V", "is_causal": True, "eps": 0.5, "unknown": None}
    assert gpu_bench.call_reference(lambda *tensors: len(tensors), params, [1, 2]) == 2


def test_a_reference_gets_its_tensors_by_name_a_mapped_name_or_says_what_it_lacked():
    """Issue 57: 11 of 55 examples were reference-failed on the H200, most for a name the reference spells otherwise
    than the kernel (is_causal for causal). Tensors are bound by their parameter's name whatever their order, a
    config mapping (reference_args) names the rest, and a name nothing gives is said."""
    seen = {}

    def ref_program(V, Q, K, is_causal, scale=None):  # another order than the kernel's inputs
        seen.update(Q=Q, K=K, V=V, is_causal=is_causal, scale=scale)
        return "out"

    names, inputs = ["Q", "K", "V"], ["q", "k", "v"]
    with pytest.raises(gpu_bench.ReferenceArgumentMissing, match=r"no value for 'is_causal' .* reference_args"):
        gpu_bench.call_reference(ref_program, {"causal": True}, inputs, names)
    mapped = gpu_bench.call_reference(ref_program, {"causal": True}, inputs, names, mapping={"is_causal": "causal"})
    assert mapped == "out" and seen == {"Q": "q", "K": "k", "V": "v", "is_causal": True, "scale": None}
    # a dtype reaches the reference (torch code) as torch's ("T.float16" as TileLang's object reads as a device
    # string to torch: attention_sink's reference failed so on the H200); another TileLang object as TileLang's
    import tilelang.language as T
    import torch

    def ref_cast(x, dtype, policy=None):
        return (x, dtype, policy)

    params = {"dtype": "T.float16", "policy": "T.GemmWarpPolicy.Square"}
    assert gpu_bench.call_reference(ref_cast, params, ["x"], ["X"]) == ("x", torch.float16, T.GemmWarpPolicy.Square)


def test_a_reference_that_returns_a_function_gets_the_tensors_it_did_not_take():
    """TileLang's convolution examples write ref_program(stride, padding, dilation) returning main(A, B): on the
    H100 both were reference-failed. Mapped by reference_args, the factory gets the kernel's parameters and the
    function it returns the input tensors, by name where it names them."""

    def ref_program(stride, padding, dilation):
        def main(B, A):  # named, in another order than the kernel's inputs
            return (A, B, stride, padding, dilation)

        return main

    params = {"S": 2, "P": 1, "D": 3}
    mapping = {"stride": "S", "padding": "P", "dilation": "D"}
    assert gpu_bench.call_reference(ref_program, params, ["a", "b"], ["A", "B"], mapping) == ("a", "b", 2, 1, 3)
    assert gpu_bench.call_reference(lambda: lambda *tensors: tensors, {}, ["a", "b"]) == ("a", "b")


def test_do_bench_beside_is_cupti_where_it_measures_else_event(monkeypatch):
    """The stage's do_bench_ms: cupti first (the kernel's device time alone), else the event backend; a profiler
    that saw no kernel (0 ms) is no time. TileLang's do_bench is replaced here only for what the stage does with
    its answers: the real one needs a GPU (tests/test_gpu_bench.py times it there)."""
    import tilelang.profiler

    def answers(by_backend):
        def do_bench(fn, backend="event"):
            answer = by_backend[backend]
            if isinstance(answer, Exception):
                raise answer
            return answer

        return do_bench

    cases = [
        ({"cupti": 0.25, "event": 0.5}, (0.25, "cupti")),
        ({"cupti": RuntimeError("CUPTI_ERROR_NOT_INITIALIZED"), "event": 0.5}, (0.5, "event")),
        ({"cupti": 0.0, "event": [0.5, 0.4]}, (0.5, "event")),
    ]
    for by_backend, expected in cases:
        monkeypatch.setattr(tilelang.profiler, "do_bench", answers(by_backend))
        assert gpu_bench.tilelang_do_bench(lambda: None) == expected
    monkeypatch.setattr(tilelang.profiler, "do_bench", answers({"cupti": 0.0, "event": ValueError("no CUDA")}))
    assert gpu_bench.tilelang_do_bench(lambda: None) == (None, "event: ValueError: no CUDA")
    monkeypatch.setattr(tilelang.profiler, "do_bench", lambda fn: 0.75)  # a TileLang whose do_bench has no backend
    assert gpu_bench.tilelang_do_bench(lambda: None) == (0.75, "event")


def test_readmes_table_of_tilelang_examples_is_what_the_recorded_h200_table_makes():
    """docs/gpu-stage.md's table of TileLang's own examples on the H200 is speed_table.py's output for the recorded
    table; its counts by status and by check, and its do_bench statements, are the table's."""
    sys.path.insert(0, str(REPO / "benchmarks" / "tilelang_examples"))
    import speed_table

    recorded = DATA / "kernel_speed_h200_examples_0.1.13_checked.csv"
    rows = kernel_speed.read_csv(recorded)
    with open(recorded, newline="") as handle:
        made = speed_table.table(list(csv.DictReader(handle)))
    readme = (REPO / "docs" / "gpu-stage.md").read_text()
    assert made in readme
    assert len(made.splitlines()) == len(rows) + 2
    assert {row["status"] for row in rows} <= set(statuses.SPEED_STATUSES)
    section = " ".join(readme[readme.index("## TileLang's own examples on an H200") :].split())
    said = " ".join(section.split()[:200])
    counts = {status: sum(row["status"] == status for row in rows) for status in statuses.SPEED_STATUSES}
    for status, count in counts.items():
        if count:
            assert f"{count} `{status}`" in said, status
    for check in ("reference", "launch-only", "reference-failed"):
        count = sum(row["status"] == statuses.STATUS_OK and row["check"] == check for row in rows)
        assert f"{count} {check}" in said or f"{count} checked against" in said, check
    assert {row["timing_method"] for row in rows if row["latency_ms"]} == {"cuda-graph+l2-flush"}
    # do_bench beside the stage's latency: the page's counts and ranges are the recorded file's
    timed = [row for row in rows if row["latency_ms"] and row["do_bench_ms"]]
    large = [row for row in timed if row["latency_ms"] >= 0.1]
    within = [row for row in large if abs(row["do_bench_ms"] / row["latency_ms"] - 1) <= 0.05]
    assert f"| 0.1 ms and more ({len(large)}) | {len(within)} within 5 %" in readme
    small = sorted(row["do_bench_ms"] / row["latency_ms"] for row in timed if row["latency_ms"] < 0.01)
    assert f"| under 10 µs ({len(small)}) | do_bench reads {small[0]:.2f}x-{small[-1]:.2f}x |" in readme


IN_PLACE_KERNEL = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def scale_and_sum(N=256, block=128):
    @T.prim_func
    def main(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2  # B: an input written in place
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main


def ref_program(A, B, N):
    return A * 3, A * 2  # C first (the returned output), then B


def ref_lacking(A, B, causal):
    return A
"""


def test_every_written_buffer_is_checked_against_the_reference_by_place(tmp_path):
    """The stage's check on CPU tensors, the launch done by torch as the kernel would: the out_idx output C and the
    input B written in place are both outputs, each compared with the reference's result in the same place; a wrong
    B is found and named; a reference lacking an argument is reference-failed naming it."""
    import torch
    from tilelang_churn.trace import trace_cli

    kernel = tmp_path / "in_place.py"
    kernel.write_text(IN_PLACE_KERNEL)
    args = ["--kernel-file", str(kernel), "--function", "scale_and_sum", "--target", "cuda-sm90"]
    io = gpu_bench.kernel_io(trace_cli.parse_lowering([*args, "--reference", "ref_program"]))
    assert (io.written, io.input_names) == ((1, 2), ["A", "B"])
    torch.manual_seed(0)
    a, b = io.inputs("cpu")
    b.copy_(a * 2)  # what the kernel does on the GPU
    outputs = io.outputs([a, b], a + b)
    assert list(outputs) == ["C", "B"]
    checked = gpu_bench.check_against_reference(io, outputs, [a, b])
    assert checked["check"] == "reference" and checked["correct"], checked
    assert (checked["checked_outputs"], checked["tolerance"]) == ("C B", 2e-2)
    b[0] += 1.0
    wrong = gpu_bench.check_against_reference(io, outputs, [a, b])
    assert not wrong["correct"] and wrong["max_abs_error"] == pytest.approx(1.0, rel=1e-2)
    lacking = gpu_bench.kernel_io(trace_cli.parse_lowering([*args, "--reference", "ref_lacking"]))
    failed = gpu_bench.check_against_reference(lacking, outputs, [a, b])
    assert failed["check"] == "reference-failed" and "no value for 'causal'" in failed["error"], failed
    mapped = trace_cli.parse_lowering([*args, "--reference", "ref_lacking", "--reference-args", '{"causal": "N"}'])
    assert mapped.reference_args == {"causal": "N"}
    assert trace_cli.parse_lowering(trace_cli.job_argv(mapped)).reference_args == {"causal": "N"}
    checked = gpu_bench.check_against_reference(gpu_bench.kernel_io(mapped), outputs, [a, b])
    assert checked["check"] == "reference" and checked["checked_outputs"] == "C", checked


def test_a_kernel_without_a_reference_is_checked_against_the_previous_version(tmp_path):
    """Issue 57's differential check across versions: a launch-only row of the second version is compared with the
    outputs the first version's job of the same configuration kept; equal outputs are right, other ones wrong, a
    third version compares with the second; another configuration and a job that kept nothing are left alone."""
    import torch
    from tilelang_churn.gpu import output_check

    torch.manual_seed(0)
    c = torch.randn(64, 64).half()
    base = {"target_name": "cuda-sm90", "kernel": "k", "params": '{"N":64}', "pass_configs": "{}", "status": "ok"}

    def job(version: str, out, **row) -> tuple[dict, Path]:
        folder = tmp_path / version / row.get("params", base["params"]).strip("{}").replace('"', "")
        folder.mkdir(parents=True)
        if out is not None:
            output_check.save_kept(folder / output_check.KEPT_OUTPUTS, {"C": output_check.keep(out)})
        full = base | {"tilelang_version": version, "check": "launch-only", "correct": None} | row
        return full, folder / "speed.json"

    wrong = c.clone()
    wrong[3, 5] += 2.0
    jobs = [job("0.1.13", c), job("0.1.14", c.clone()), job("0.1.15", wrong), job("0.1.15-other", None)]
    jobs.append(job("0.1.15", c, params='{"N":128}'))  # another configuration: nothing before it
    # a reference that raised is no check: the version is (the H100's convolution rows, before their mapping)
    failed = {"check": "reference-failed", "error": "reference: ReferenceArgumentMissing: ..."}
    jobs.append(job("0.1.16", wrong, **failed))
    rows = kernel_speed.check_across_versions([row for row, _ in jobs], [path for _, path in jobs])
    assert (rows[5]["check"], rows[5]["correct"], rows[5]["status"]) == ("version:0.1.15", True, "ok")
    assert rows[5]["error"] == failed["error"]
    assert rows[0]["check"] == "launch-only" and rows[4]["check"] == "launch-only"
    assert (rows[1]["check"], rows[1]["correct"], rows[1]["max_abs_error"], rows[1]["status"]) == (
        "version:0.1.13", True, 0.0, "ok")  # fmt: skip
    assert (rows[2]["check"], rows[2]["correct"], rows[2]["status"]) == ("version:0.1.14", False, "wrong")
    assert rows[2]["max_abs_error"] == pytest.approx(2.0, rel=1e-2) and rows[2]["checked_outputs"] == "C"
    assert rows[3]["check"] == "launch-only"  # kept nothing: not compared


@pytest.mark.integration
def test_a_job_that_imports_another_tilelang_than_its_version_runs_nothing(tmp_path):
    """On the lent H100 a version's GPU jobs imported the workflow's TileLang; they ran, checked and timed it, and
    only then were marked: the row held another TileLang's outputs and latency. Now the job stops at the import,
    before any compile or launch (so no GPU is needed to get there)."""
    require_tilelang()
    import dataclasses

    import tilelang

    spec = trace_cli.parse_args(["--mode", "instrument", "--shape", "64,64,64", "--block", "32,32,32"]).spec
    other = "0.1.8" if not tilelang.__version__.startswith("0.1.8") else "0.1.9"
    keep = tmp_path / "outputs.pt"
    row = gpu_bench.run_job(dataclasses.replace(spec, release=other), {}, keep=keep)
    assert row["status"] == statuses.STATUS_BUILD_FAILED, row
    assert row["error"] == f"imported tilelang {tilelang.__version__}, not {other}"
    assert row["compiled"] is False and row.get("check") is None and row.get("latency_ms") is None
    assert not keep.exists()


def test_the_two_release_counts_of_the_docs_are_the_recorded_runs():
    """docs/gpu-stage.md's "Two releases on an H100": its counts are two_versions.py's for the recorded runs."""
    sys.path.insert(0, str(REPO / "benchmarks" / "tilelang_examples"))
    import two_versions

    found = two_versions.summary(DATA)
    text = (REPO / "docs" / "gpu-stage.md").read_text()
    section = text[text.index("## Two releases on an H100") : text.index("### The knockout of three of them")]
    assert f"**{found['checked']} of {found['configurations']}**" in section
    table = section[section.index("| not checked | why |") :].split("\n\n")[0]
    named = re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.M)
    assert sorted(next(k for k in found["unchecked"] if name in k) for name in named) == found["unchecked"]
    assert f"**{found['within_3_percent']} of {found['repeated']}**" in section
    assert f"largest move was {found['largest_move']:.1%}".replace("%", " %") in section


def test_the_docs_reasons_the_stage_differs_from_do_bench_are_the_recorded_run():
    """docs/gpu-stage.md's "Why does the stage differ from do_bench?": timing_reasons.py's counts and reasons for
    the recorded H100 run (own_timing.py's five methods per kernel, the GPU's clocks beside), and every kernel more
    than 5 % from do_bench has a measured reason."""
    sys.path.insert(0, str(REPO / "benchmarks" / "tilelang_examples"))
    import timing_reasons

    found = timing_reasons.summary(DATA)
    text = (REPO / "docs" / "gpu-stage.md").read_text()
    section = text[text.index("### Why does the stage differ from do_bench?") : text.index("### The knockout of three")]
    for label, band in found.items():
        reasons = sorted(band["reasons"].items(), key=lambda pair: -len(pair[1]))
        cells = [
            label,
            band["kernels"],
            band["event"],
            band["cupti"],
            f"{band['event_low']:.2f}x-{band['event_high']:.2f}x",
        ]
        row = "| " + " | ".join(map(str, cells)) + " | " + ", ".join(f"`{key}` {len(names)}" for key, names in reasons)
        assert row + " |" in section, row
        assert "unexplained" not in band["reasons"], band["reasons"]
    assert found["0.1 ms and more"]["reasons"]["clock"] == ["attention_sink_example_mha_sink_fwd_bhsd"]
    assert found["10-100 µs"]["reasons"]["host"] == ["dynamic_shape_example_dynamic"]
    assert f"median {found['under 10 µs']['launch_us_median']:.1f} µs under 10 µs" in section
