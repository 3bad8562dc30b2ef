"""The job spec (core/job_spec.py) is a job's one form: the grid makes it, its arguments are made from it in one
place, the trace script's command line parses them back into the same spec, and the rows a traced job writes carry
its key."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from tilelang_churn.core import devices, jobs, passes_table, trace_modes
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.gpu import gpu_bench
from tilelang_churn.grid import config_checks, grid_keys, job_grid
from tilelang_churn.trace import trace_cli

REPO = Path(__file__).resolve().parents[1]
INSTALLED = "0.1.15"


def default_config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def every_axis(tmp_path) -> dict:
    """The default grid and every way a job can be spelled: JSON targets with and without a name, pass configs,
    a user's kernel file, a release in an environment of its own, the knockout, device profiles."""
    kernel = tmp_path / "my kernels" / "scale.py"
    kernel.parent.mkdir()
    kernel.write_text("def build(N=8, tag='x'):\n    pass\n")
    cfg = default_config()
    cfg["targets"] = [
        "cuda-sm90",
        {"name": "mine", "target": {"kind": "cuda", "arch": "sm_89"}},
        {"name": "json-hip-gfx90a", "target": {"kind": "hip", "mcpu": "gfx90a"}},
    ]
    cfg["defaults"]["pass_configs"] = [{}, {"tl.disable_warp_specialized": True}]
    cfg["kernels"].append({"name": "scale", "file": str(kernel), "params": [{"N": 512, "tag": "a b"}]})
    device = {**dataclasses.asdict(devices.PROFILES["H100"]), "name": "My GPU", "multi_processor_count": 100}
    cfg["kernels"].append({"name": "scale_b200", "file": str(kernel), "params": [{"N": 512}], "device": "B200"})
    cfg["kernels"].append({"name": "scale_mine", "file": str(kernel), "params": [{}], "device": device})
    cfg["knockout"] = {}
    cfg["versions"] = ["0.1.14", INSTALLED]
    cfg["job_files"] = "tables"
    return cfg


@pytest.fixture(params=["default", "every_axis"])
def grid(request, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = default_config() if request.param == "default" else every_axis(tmp_path)
    return job_grid.build_grid(config_checks.validate_config(copy.deepcopy(cfg)), installed=INSTALLED)


def test_the_trace_script_parses_every_job_back_into_its_spec(grid, tmp_path):
    for job in [*grid.jobs.values(), *(job for batch in grid.knockout_batches for job in batch.jobs)]:
        parsed = trace_cli.parse_args([*job.args, "--out", str(tmp_path)]).spec
        assert parsed == job.spec, job.wildcards
        assert trace_cli.job_argv(parsed) == job.args


def test_a_gpu_job_is_its_configurations_lowering_without_a_mode(grid):
    found = gpu_bench.gpu_jobs(grid)
    assert found and all(target in ("cuda-sm80", "cuda-sm90", "mine") for _, target, _ in found)
    for key, args in found.items():
        parsed = trace_cli.parse_lowering(list(args))
        assert parsed.mode is None and "--mode" not in args and "--release-env" not in args
        assert parsed == dataclasses.replace(grid.lowerings[key], release_env=None)


def test_a_spec_names_its_files_and_keys_as_the_grid_and_the_tables_do(grid):
    for (version, target, shape, mode), job in grid.jobs.items():
        spec = job.spec
        assert (spec.release, spec.target_name, spec.mode) == (version, target, mode)
        assert job.run_dir == jobs.RUN_DIR.format(version=version, target=target, shape=shape, mode=mode)
        provenance = spec.provenance(version)
        assert list(provenance) == passes_table.PROVENANCE_COLUMNS
        assert spec.key == jobs.job_key(provenance)
        takes_passes = trace_modes.MODES[mode].takes_passes
        assert (spec.keep_ir, spec.passes != ()) == (
            grid.compares_releases and mode in trace_modes.KEEPS_IR,
            takes_passes,
        )
        # a mode that runs every pass lowers as the instrument job does: what a served job shares
        assert (spec.lowering == spec.with_mode("instrument").lowering) == (not takes_passes)


def test_jobs_of_one_lowering_pair_and_others_do_not():
    gemm = job_grid.gemm_fields(
        grid_keys.resolve_shapes(config_checks.validate_config(default_config()))["1024x1024x1024"]
    )
    base = JobSpec(**gemm, target_name="cuda-sm90", target=trace_cli.TARGETS["cuda-sm90"], mode=None, release="0.1.15")
    env, served = base.with_mode("trace-env", keep="tables"), base.with_mode("instrument", keep_ir=True)
    assert env.lowering == served.lowering
    assert served.keep_ir and not base.with_mode("trace-env", keep_ir=True).keep_ir
    other = dataclasses.replace(served, params={**served.params, "stages": 2})
    assert other.lowering != env.lowering
    assert dataclasses.replace(served, pass_configs={"tl.disable_tma_lower": True}).lowering != env.lowering


@pytest.mark.slow
def test_the_rows_a_traced_job_wrote_carry_its_spec(finished_run, monkeypatch):
    """Every job of a real run (config/test_config.yaml): its passes.csv rows have the key and provenance of the
    spec its arguments parse into, and run.json holds that spec's record."""
    cfg = default_config() | yaml.safe_load((REPO / "config" / "test_config.yaml").read_text())
    monkeypatch.chdir(finished_run)
    grid = job_grid.build_grid(config_checks.validate_config(cfg))
    assert len(grid.jobs) == 12
    for job in grid.jobs.values():
        out = finished_run / job.run_dir
        rows = passes_table.read_rows(out / "passes.csv")
        spec = trace_cli.parse_args([*job.args, "--out", str(out)]).spec
        assert spec == job.spec
        version = rows[0]["tilelang_version"]
        assert {jobs.job_key(row) for row in rows} == {jobs.job_key(spec.provenance(version))}
        assert jobs.job_key(rows[0])[1:] == spec.key[1:]  # all but the release as the job imported it
        for column, value in spec.provenance(version).items():
            assert {str(row[column]) for row in rows} == {"" if value is None else str(value)}, column
        assert json.loads((out / "run.json").read_text())["spec"] == json.loads(json.dumps(spec.record()))


def test_two_kernels_that_fill_the_parameter_columns_alike_get_labels_of_their_own():
    """A user's kernel declaring the GEMM's COLUMNS with the GEMM's values: the GEMM keeps its label alone, and
    where two kernels fill the columns, each such label names its kernel after the target."""
    import conftest
    from conftest import job_provenance

    gemm = job_provenance(mode="instrument")
    mine = {**gemm, "kernel": "mm_tn", "kernel_label": "mm_tn(M=1024, N=1024, K=512)"}
    other = job_provenance(mode="instrument", K=256)
    alone = jobs.distinct_config_labels({jobs.config_key(gemm): gemm, jobs.config_key(other): other})
    assert list(alone.values()) == [jobs.config_label(gemm), jobs.config_label(other)]
    assert jobs.config_label(gemm) == jobs.config_label(mine)  # named by the columns alone
    both = jobs.distinct_config_labels({jobs.config_key(row): row for row in (gemm, mine, other)})
    assert list(both.values()) == [
        "cuda-sm90 gemm 1024x1024x512 b128x128x32 float16/float32 t128 s3 instrument",
        "cuda-sm90 mm_tn 1024x1024x512 b128x128x32 float16/float32 t128 s3 instrument",
        "cuda-sm90 gemm 1024x1024x256 b128x128x32 float16/float32 t128 s3 instrument",
    ]
    rmsnorm = {**other, **conftest.other_kernel("rmsnorm", "{}", "rmsnorm")}  # a kernel that fills none
    plain = jobs.distinct_config_labels({jobs.config_key(row): row for row in (gemm, rmsnorm)})
    assert list(plain.values()) == [jobs.config_label(gemm), "cuda-sm90 rmsnorm instrument"]
