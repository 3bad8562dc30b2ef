"""The pass knockout's GPU job (gpu/knockout_gpu.py): its variants compiled with the pass skipped inside
tilelang.compile, each in a process of its own, timed beside the baseline in the same run.

The CPU test runs anywhere: without a CUDA device every variant is a row (compile_failed or launch_failed), never
a crash, and the knockout is seen to reach tilelang.compile's own passes. The tests marked gpu need a CUDA
device (`python3 -m pytest -m gpu tests/test_knockout_gpu.py`); their numbers are checked against other
measurements of the same run (the baseline timed by the same job, torch's reference), never typed in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_tilelang
from tilelang_churn.core import knockout_rows, statuses
from tilelang_churn.knockout import pass_knockout
from tilelang_churn.tables import knockout_table

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def knock_out(tmp_path: Path, args: list, passes: str) -> Path:
    """The CPU knockout of one configuration (knockout_batch.py): its knockout.json."""
    out = tmp_path / "runs" / "v" / "t" / "c"
    jobs = tmp_path / "jobs.json"
    job = {"args": ["--mode", "instrument", *args, "--out", str(out)], "log": str(out) + ".log"}
    jobs.write_text(json.dumps([job]))
    subprocess.run(
        [sys.executable, str(SCRIPTS / "knockout_batch.py"), "--jobs", str(jobs), "--workers", "2", "--passes", passes],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return out / "knockout.json"


def gpu_job(tmp_path: Path, record: Path, device: Path, args: list, workers: int = 2) -> Path:
    out = tmp_path / "gpu" / "v" / "t" / "c" / "knockout_gpu.csv"
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "knockout_gpu.py"), "--knockout", str(record), "--device", str(device),
         "--out", str(out), "--workers", str(workers), *args],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out.with_name("knockout_gpu.json")


@pytest.mark.slow  # nvcc per variant
def test_without_a_gpu_every_variant_is_a_row_and_the_knockout_reaches_tilelang_compile(tmp_path):
    require_tilelang()
    args = ["--shape", "256,256,256", "--block", "64,64,32", "--target", "cuda-sm90"]
    record = knock_out(tmp_path, args, "AnnotateEntryFunc")  # one variant: each costs a compile with nvcc
    device = tmp_path / "device.json"
    device.write_text(json.dumps({"gpu_name": "none", "gpu_arch": "sm_90", "gpu_uuid": "test"}))
    gpu_record = gpu_job(tmp_path, record, device, args)
    rows = {row["variant"]: row for row in knockout_table.read_configuration(record, gpu_record)}
    assert set(rows) == {"baseline", "AnnotateEntryFunc"}
    for name, row in rows.items():
        assert row["gpu_status"] in (statuses.STATUS_COMPILE_FAILED, statuses.STATUS_LAUNCH_FAILED), row
        assert row["gpu_error"]
        assert row["compile_hook"] == (pass_knockout.HOOK_NONE if name == "baseline" else pass_knockout.HOOK_SESSION)
    # TVM asked the knockout about the pass inside tilelang.compile's own PassContexts, and it was skipped there
    assert rows["AnnotateEntryFunc"]["compile_skipped_runs"] == 1
    assert rows["baseline"]["compile_skipped_runs"] is None
    assert rows["AnnotateEntryFunc"]["latency_ratio"] is None  # nothing timed, nothing made up


def test_a_variant_whose_kernel_never_finishes_on_the_gpu_is_a_timeout_row_and_the_others_go_on(tmp_path, monkeypatch):
    """Seen on the H200: the 4096^3 GEMM with 32x32x32 blocks, AnnotateWarpGroupRegAlloc knocked out, never
    finished, holding the GPU's lock. gpu_bench.run_job arms SIGALRM once it holds the GPU; here a stand-in for the
    hung launch (the alarm armed as run_job arms it, then no return) and one for a variant that returns."""
    import signal
    import time

    from tilelang_churn.gpu import gpu_bench, knockout_gpu

    def run_job(
        spec, device, repeats, launches, cache_dir=None, knockout=None, knockout_run=False, gpu_seconds=None, **_
    ):
        if knockout is not None and knockout.knocked_pass_id == "Hangs":
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(int(gpu_seconds))
            time.sleep(60)  # the kernel that never finishes
        return {"status": statuses.STATUS_OK, "latency_ms": 1.0, "latency_min_ms": 1.0, "latency_max_ms": 1.0}

    monkeypatch.setattr(gpu_bench, "run_job", run_job)
    variants = [pass_knockout.BASELINE, pass_knockout.Variant("Hangs"), pass_knockout.Variant("Returns")]
    started = time.monotonic()
    results = knockout_gpu.run_variants(None, {}, variants, tmp_path, workers=2, timeout=300, repeats=1, launches=1,
                                        gpu_seconds=1)  # fmt: skip
    assert time.monotonic() - started < 30  # not the 300 s limit of the whole variant, nor the 60 s sleep
    hung = results[1]
    assert hung["status"] == statuses.STATUS_TIMEOUT and "past 1 s on the GPU" in hung["error"]
    assert [results[0]["status"], results[2]["status"]] == [statuses.STATUS_OK, statuses.STATUS_OK]


def test_the_baseline_runs_first_and_every_variant_is_checked_against_its_outputs(tmp_path, monkeypatch):
    """Issue 57: a variant without a reference is checked against the baseline's outputs on the same seeded inputs,
    so the baseline runs alone first, keeps its outputs, and each variant (two workers) is handed them."""
    import time

    from tilelang_churn.gpu import gpu_bench, knockout_gpu

    def run_job(spec, device, repeats, launches, knockout=None, keep=None, baseline=None, **_):
        started = time.monotonic()
        if keep is not None:
            time.sleep(0.5)  # a baseline slower than the variants: they must still wait for it
            keep.write_text("outputs")
        return {"status": statuses.STATUS_OK, "started": started, "ended": time.monotonic(),
                "keep": str(keep) if keep else None, "baseline": str(baseline) if baseline else None,
                "baseline_there": bool(baseline and baseline.exists())}  # fmt: skip

    monkeypatch.setattr(gpu_bench, "run_job", run_job)
    variants = [pass_knockout.BASELINE, pass_knockout.Variant("A"), pass_knockout.Variant("B")]
    results = knockout_gpu.run_variants(None, {}, variants, tmp_path, workers=2, timeout=60, repeats=1, launches=1)
    base, *others = results
    assert base["keep"] and base["baseline"] is None
    for other in others:
        assert other["started"] >= base["ended"] and other["baseline"] == base["keep"] and other["baseline_there"]
        assert other["keep"] is None
    assert not (tmp_path / ".variants").exists()  # the kept outputs go with the scratch folder


# ------------------------------------------------------------------------------------------------ GPU

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device visible (torch.cuda.is_available())"
)


@pytest.fixture(scope="module")
def device_file(tmp_path_factory):
    from tilelang_churn.gpu import gpu_bench

    path = tmp_path_factory.mktemp("device") / "device.json"
    path.write_text(json.dumps(gpu_bench.probe_device()))
    return path


@pytest.mark.gpu
@needs_gpu
def test_a_knockout_is_timed_against_its_baseline_in_one_run(tmp_path, device_file):
    args = ["--shape", "1024,1024,1024", "--target", "cuda-sm90"]
    record = knock_out(tmp_path, args, "changed")
    gpu_record = gpu_job(tmp_path, record, device_file, args, workers=8)
    rows = {row["variant"]: row for row in knockout_table.read_configuration(record, gpu_record)}
    baseline = rows["baseline"]
    assert baseline["gpu_status"] == statuses.STATUS_OK and baseline["check"] == "reference"
    timed = [row for name, row in rows.items() if name != "baseline" and row["latency_ratio"] is not None]
    assert timed
    for row in timed:
        # the ratio is of the two timings of this run, and its range is the repeats' own
        assert row["baseline_latency_ms"] == baseline["latency_ms"]
        assert row["latency_ratio"] == pytest.approx(row["latency_ms"] / baseline["latency_ms"])
        assert row["latency_ratio_low"] <= row["latency_ratio"] <= row["latency_ratio_high"]
        # both clocks read (NVML) and the baseline's is the baseline row's own
        assert row["sm_clock_mhz"] > 0 and row["baseline_sm_clock_mhz"] == baseline["sm_clock_mhz"] > 0
        assert row["clock_limits"]
    # where the compiled source differs, it is this variant's own (no cached binary): its hash is not the baseline's
    differing = [row for row in timed if row["gpu_source_equal"] is False]
    assert differing and all(row["gpu_source_sha256"] != baseline["gpu_source_sha256"] for row in differing)


@pytest.mark.gpu
@needs_gpu
def test_a_knockout_that_makes_the_result_wrong_is_reported_wrong(tmp_path, device_file):
    """Found by running every changed pass of the default grid's sm_90 configurations on an H200 (TileLang 0.1.15,
    tests/data/gpu/PROVENANCE.md): the GEMM with 32x32x32 blocks gives a wrong result without Simplify or without
    AnnotateWarpGroupRegAlloc; the check against torch's result says so, with the error and the tolerance."""
    args = ["--shape", "1024,1024,1024", "--block", "32,32,32", "--target", "cuda-sm90"]
    record = knock_out(tmp_path, args, "Simplify,AnnotateWarpGroupRegAlloc")
    gpu_record = gpu_job(tmp_path, record, device_file, args, workers=8)
    rows = {row["variant"]: row for row in knockout_table.read_configuration(record, gpu_record)}
    assert rows[knockout_rows.BASELINE]["gpu_status"] == statuses.STATUS_OK
    wrong = [row for row in rows.values() if row["gpu_status"] == statuses.STATUS_WRONG]
    assert wrong, [(name, row["gpu_status"], row["max_rel_error"]) for name, row in rows.items()]
    for row in wrong:
        assert row["max_rel_error"] > row["tolerance"] and row["latency_ratio"] is None
        assert f"{row['tolerance']:.3g}" in row["gpu_error"]


# ------------------------------------------------------------------------------- recorded on the H200

DATA = Path(__file__).resolve().parent / "data" / "gpu"


def test_the_tables_recorded_on_the_h200_hold_their_schema_and_their_own_arithmetic():
    """tests/data/gpu/PROVENANCE.md: the default grid's sm_90 configurations (Snakemake, gpu=true) and the 4096^3
    GEMM's GPU job. Nothing typed in: each ratio against the latencies beside it, each status against its row."""
    grid = knockout_rows.read_rows(DATA / "knockout_h200_0.1.15.csv")
    gemm = knockout_rows.read_rows(DATA / "knockout_gpu_h200_4096_0.1.15.csv", columns=knockout_rows.GPU_TABLE_COLUMNS)
    seen = {row["gpu_status"] for row in grid + gemm if row["gpu_status"]}
    assert set(statuses.GPU_STATUSES) - {statuses.STATUS_BUILD_FAILED} <= seen  # ok, wrong, compile and launch failed
    assert {row["status"] for row in grid} == {statuses.STATUS_LOWERED, statuses.STATUS_LOWER_FAILED}
    for row in grid + gemm:
        if row.get("status") == statuses.STATUS_LOWER_FAILED:
            assert not row["gpu_status"]  # only what lowered is compiled
        if row["latency_ratio"] is not None:
            assert row["gpu_status"] == statuses.STATUS_OK
            assert row["latency_ratio"] == pytest.approx(row["latency_ms"] / row["baseline_latency_ms"])
            assert row["latency_ratio_low"] <= row["latency_ratio"] <= row["latency_ratio_high"]
        if row["gpu_status"] == statuses.STATUS_WRONG:
            assert row["max_rel_error"] > row["tolerance"] and row["latency_ratio"] is None
        if row["gpu_status"] and row["variant"] != knockout_rows.BASELINE:
            assert row["compile_hook"] == pass_knockout.HOOK_SESSION
    # every configuration's baseline compiled, checked right and timed
    baselines = [row for row in grid if row["variant"] == knockout_rows.BASELINE]
    assert len(baselines) == 11 and all(row["gpu_status"] == statuses.STATUS_OK for row in baselines)
    assert gemm[0]["variant"] == knockout_rows.BASELINE and gemm[0]["gpu_status"] == statuses.STATUS_OK


def test_the_knockout_of_three_of_tilelangs_examples_on_the_h200_is_what_docs_gpu_stage_says():
    """tests/data/gpu/PROVENANCE.md, 2026-12-05 (knockout_v0.1.13.yaml, passes changed, gpu): the table's own
    arithmetic, tl.Simplify and tirx.Simplify as two variants, and each ratio and status the page states, read from
    the table."""
    rows = knockout_rows.read_rows(DATA / "knockout_h200_examples_0.1.13.csv")
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "gpu-stage.md").read_text().split())
    by = {(row["kernel"].split("_example_")[-1], row["variant"]): row for row in rows}
    for row in rows:
        if row["latency_ratio"] is not None:
            assert row["latency_ratio"] == pytest.approx(row["latency_ms"] / row["baseline_latency_ms"])
        if row["gpu_status"] == statuses.STATUS_WRONG:
            assert row["max_rel_error"] != row["max_rel_error"] or row["max_rel_error"] > row["tolerance"]
    simplify = [by["gqa_fwd_bshd", name] for name in ("tl.Simplify", "tirx.Simplify")]
    assert [row["knocked_pass"] for row in simplify] == ["Simplify", "Simplify"]
    assert [row["source_equal"] for row in simplify] == [True, False]  # one name, two passes, two outcomes
    regalloc = by["gqa_fwd_bshd", "AnnotateWarpGroupRegAlloc"]
    assert regalloc["gpu_status"] == statuses.STATUS_OK and f"{regalloc['latency_ratio']:.2f}x" == "0.78x"
    assert f"{regalloc['latency_ms']:.3f} ms, 0.78x" in page
    launch = by["gemm_intrinsics", "MaterializeKernelLaunch"]
    assert launch["gpu_status"] == statuses.STATUS_OK and f"{launch['latency_ratio']:.1f}x slower" in page
    assert by["gemm_intrinsics", "ThreadSync"]["gpu_status"] == statuses.STATUS_WRONG
    same_source = [
        row["latency_ratio"]
        for (kernel, _), row in by.items()
        if kernel == "dequant_gemm_w4a8" and row["source_equal"] and row["latency_ratio"] is not None
    ]
    assert f"range from {min(same_source):.2f}x to {max(same_source):.2f}x" in page


def test_the_attribution_run_knocked_out_passes_of_both_releases_beside_the_official_switch():
    """tests/data/gpu/PROVENANCE.md, 2026-12-02 (knockout_h200_attribution.yaml): each release's knockout on the GPU,
    a variant that never finishes on the GPU a timeout row, and the warp-specialization passes beside TileLang's
    switch: whether the knockout's source is the switched configuration's is recomputed from the rows' hashes."""
    for release in ("0.1.14", "0.1.15"):
        rows = knockout_rows.read_rows(DATA / f"knockout_h200_attribution_{release}.csv")
        assert {row["tilelang_version"] for row in rows} == {release}
        (hung,) = [row for row in rows if row["gpu_status"] == statuses.STATUS_TIMEOUT]
        assert "ran past 60 s on the GPU" in hung["gpu_error"] and hung["latency_ms"] is None
        beside = [row for row in rows if row["switch_pass_configs"]]
        assert {row["knocked_pass"] for row in beside} >= {"ProducerConsumerWarpSpecialized"}
        for row in beside:
            (switched,) = [
                other
                for other in rows
                if other["variant"] == knockout_rows.BASELINE and other["pass_configs"] == row["switch_pass_configs"]
                and (other["kernel"], other["params"]) == (row["kernel"], row["params"])
            ]  # fmt: skip
            assert row["switch_source_equal"] == (row["source_sha256"] == switched["source_sha256"])
            assert row["switch_latency_ms"] == switched["latency_ms"]
        # the gathering gives back what was recorded
        assert knockout_table.add_switches(rows) == rows
        # what the H200 run found: ProducerConsumerWarpSpecialized's knockout is the switch's very kernel
        (pcws,) = [row for row in beside if row["knocked_pass"] == "ProducerConsumerWarpSpecialized"]
        assert pcws["switch_source_equal"] is True
