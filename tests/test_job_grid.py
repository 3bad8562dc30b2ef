"""The job grid on its own (grid/job_grid.py, grid/config_checks.py, batching/: scripts/job_grid.py): the jobs and
batches a config asks for, and every validation message."""

from __future__ import annotations

import copy
import importlib.util
import json
import shlex
import string

import pytest
from conftest import entry
from tilelang_churn.batching import batches, job_cost
from tilelang_churn.core import trace_modes
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid import config_checks, config_schema, grid_keys, job_grid
from tilelang_churn.grid.config_checks import ConfigError
from tilelang_churn.releases.capabilities import Capabilities
from tilelang_churn.trace import trace_batch, trace_cli

INSTALLED = "0.1.15"


def grid_of(installed=INSTALLED, **overrides):
    cfg = {"shapes": [{"M": 256, "N": 256, "K": 256}], "targets": ["cuda-sm90"], "modes": ["trace-env"]}
    cfg.update(copy.deepcopy(overrides))
    return job_grid.build_grid(config_checks.validate_config(cfg), installed=installed)


def refused(**overrides) -> str:
    with pytest.raises(ConfigError) as caught:
        grid_of(**overrides)
    return str(caught.value)


def test_jobs_are_targets_x_shapes_x_modes_in_config_order():
    grid = grid_of(
        shapes=[{"M": 64, "N": 64, "K": 64}, {"M": 100, "N": 100, "K": 100, "block": [32, 32, 32]}],
        targets=["hip", "cuda-sm80"],
        modes=["pass-diff", "trace-env"],
    )
    assert list(grid.jobs) == [
        (INSTALLED, target, shape, mode)
        for target in ("hip", "cuda-sm80")
        for shape in ("64x64x64", "100x100x100_b32x32x32")
        for mode in ("pass-diff", "trace-env")
    ]


def test_batches_hold_every_job_once_trace_env_apart_and_at_most_trace_batch_size():
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(7)]
    modes = ["trace-env", "trace-api", "instrument"]
    grid = grid_of(shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes, trace_batch_size=5, share_lowering=False)
    batched = [job for batch in grid.batches for job in batch.jobs]
    assert sorted(batched, key=list(grid.jobs.values()).index) == list(grid.jobs.values())  # each job once
    assert len(set(batched)) == len(grid.jobs) == 42
    for batch in grid.batches:
        assert 1 <= len(batch.jobs) <= 5 and batch.name.isidentifier()
        assert {job.version for job in batch.jobs} == {batch.version}
        assert {job.mode == "trace-env" for job in batch.jobs} == {batch.lower_trace_env}
    # 14 trace-env jobs in three batches of at most 5, a hip job cheaper than a cuda-sm90 one (job_cost.py): 4, 5
    # and 5; then the 28 others in six: 5 x 4 and 4 x 2, not 5 x 5 and 3
    assert [len(b.jobs) for b in grid.batches] == [4, 5, 5, 5, 5, 5, 5, 4, 4]
    # named from what each holds (one target, or several), then its part of its group
    assert [b.name for b in grid.batches][:4] == [
        "trace_env_0_1_15_gemm_hip_1",
        "trace_env_0_1_15_gemm_2",
        "trace_env_0_1_15_gemm_cuda_sm90_3",
        "trace_0_1_15_gemm_hip_1",
    ]


# what 0.1.12 can do, as capabilities.probe finds it in its package (test_release_envs checks the probe against
# TileLang itself): pass_diff, no lower_trace
WITHOUT_LOWER_TRACE = Capabilities(modes=("pass-diff", "instrument"), pass_configs=(), hip_lowers=True)


def test_an_instrument_job_rides_with_the_trace_env_job_whose_lowering_serves_it():
    """share_lowering (default): each instrument job follows its configuration's trace-env job, in its batch, never
    cut from it (trace_batch.pair_jobs pairs them there), in every release not probed yet: 0.1.12 too, whose batch
    lowers the instrument job on its own when the trace-env job finds no lower_trace. The batches do not depend on
    what was built."""
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(7)]
    modes = ["trace-env", "trace-api", "instrument"]
    grid = grid_of(versions=["0.1.12", "0.1.15"], shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes,
                   trace_batch_size=5)  # fmt: skip
    batched = [job for batch in grid.batches for job in batch.jobs]
    assert sorted(batched, key=list(grid.jobs.values()).index) == list(grid.jobs.values())  # each job once
    for batch in grid.batches:
        assert 1 <= len(batch.jobs) <= 5
        # the children its process forks, as the batch itself pairs its jobs: the most threads it can use
        assert batch.children == len(trace_batch.pair_jobs([{"args": list(job.args)} for job in batch.jobs]))
        modes_held = {job.mode for job in batch.jobs}
        if batch.lower_trace_env:
            assert modes_held == {"trace-env", "instrument"} and batch.name.startswith("trace_env_instrument_")
            pairs = [batch.jobs[i : i + 2] for i in range(0, len(batch.jobs), 2)]
            assert all([a.mode, b.mode] == ["trace-env", "instrument"] for a, b in pairs)
            assert all((a.target, a.shape) == (b.target, b.shape) for a, b in pairs)
        else:
            assert modes_held == {"trace-api"}
    # 0.1.15: 14 pairs in batches of 2 pairs (5 jobs at most), then the 14 trace-api jobs
    sizes = [len(b.jobs) for b in grid.batches if b.version == "0.1.15"]
    assert sizes == [4] * 7 + [5, 5, 4]
    shared = [b for b in grid.batches if b.version == "0.1.15" and b.lower_trace_env]
    alone = grid_of(shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes, trace_batch_size=5, share_lowering=False)
    assert sum(b.expected_seconds for b in shared) < sum(b.expected_seconds for b in alone.batches if b.jobs[0].mode
                                                         != "trace-api")  # fmt: skip


def test_a_version_probed_without_lower_trace_keeps_its_instrument_jobs_apart():
    """A version whose capabilities are known before any build (a wheel, an environment) and lack lower_trace: its
    trace-env jobs cost their one unsupported row each and serve no instrument job."""
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(30)]
    grid = grid_of(versions=["0.1.12", "0.1.15"], modes=["trace-env", "instrument"], shapes=shapes)
    made = batches.make_batches(grid.versions, grid.jobs, 50, 20.0, True, {"0.1.12": WITHOUT_LOWER_TRACE})

    def of(version: str, lower_trace_env: bool) -> list:
        return [b for b in made if b.version == version and b.lower_trace_env == lower_trace_env]

    (unsupported,) = of("0.1.12", True)
    assert {job.mode for job in unsupported.jobs} == {"trace-env"} and len(unsupported.jobs) == 30
    assert unsupported.expected_seconds == pytest.approx(30 * job_cost.UNSUPPORTED_SECONDS)
    assert len(of("0.1.15", True)) > 1  # lowerings (each serving its instrument job): cut at 20 s
    instrument = job_cost.expected_seconds("instrument", 1.0, target="cuda-sm90")
    older = sum(b.expected_seconds for b in of("0.1.12", False))
    assert older == pytest.approx(30 * instrument * job_cost.RELEASE_FACTOR["0.1.12"])


def test_a_grid_without_trace_env_has_no_trace_env_batch_and_the_default_size_is_50():
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(30)]
    grid = grid_of(modes=["trace-api", "pass-diff"], shapes=shapes, trace_batch_seconds=1000)
    assert [(b.name, len(b.jobs)) for b in grid.batches] == [
        ("trace_0_1_15_gemm_cuda_sm90_1", 30),  # two batches of at most 50: 30 and 30, not 50 and 10
        ("trace_0_1_15_gemm_cuda_sm90_2", 30),
    ]


def test_batches_hold_at_most_trace_batch_seconds_of_expected_lowering():
    """60 GEMM jobs of the API modes on cuda-sm90, 0.71 x 1.25 s each (batching/job_cost.py): 20 s (the default) is
    22 of them, so three batches, cut evenly (not 22, 22 and 16); a job above the limit is a batch of its own; the
    cut depends on the config alone, not on the cores a run is given."""
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(30)]
    grid = grid_of(modes=["trace-api", "pass-diff"], shapes=shapes)
    assert job_cost.expected_seconds("trace-api", 1.0, target="cuda-sm90") == pytest.approx(0.71 * 1.25)
    assert [len(b.jobs) for b in grid.batches] == [20, 20, 20]
    assert all(b.expected_seconds <= 20 for b in grid.batches)
    assert [len(b.jobs) for b in grid_of(modes=["trace-api"], shapes=shapes[:3], trace_batch_seconds=0.1).batches] == [
        1,
        1,
        1,
    ]
    assert job_cost.cut([5, 5, 5, 15, 1], 10, 50) == [range(0, 2), range(2, 3), range(3, 4), range(4, 5)]
    assert job_cost.cut([1] * 5, 100, 2) == [range(0, 2), range(2, 4), range(4, 5)]
    assert job_cost.cut([], 10, 5) == []
    # as many runs as filling each in turn gives (20, 20, 20, 1; 20, 19, 8), the longest as short as it can be
    assert job_cost.cut([5] * 12 + [1], 20, 50) == [range(0, 3), range(3, 6), range(6, 9), range(9, 13)]
    assert job_cost.cut([4] * 5 + [3] * 5 + [2] * 6, 20, 50) == [range(0, 4), range(4, 9), range(9, 16)]
    # the whole lowering on sm80 costs 2.5-3x sm90's; a target the model does not know, an average one
    assert job_cost.expected_seconds("trace-env", 1.0, target="cuda-sm80") > 2.5 * job_cost.expected_seconds(
        "trace-env", 1.0, target="cuda-sm90"
    )
    assert job_cost.expected_seconds("instrument", 1.0, target="sm90a") == job_cost.MODE_SECONDS["instrument"]


def latest_end(seconds: dict, threads: dict) -> float:
    return max(job_cost.IMPORT_SECONDS + seconds[name] / threads[name] for name in seconds)


def test_the_cores_go_to_the_batches_expected_to_end_last():
    """job_cost.share_cores against every way of giving out the cores: no allocation ends the last batch sooner,
    every core that a job can use is used, and none goes beyond a batch's jobs or below one each."""
    import itertools
    import random

    chance = random.Random(28)
    for _ in range(300):
        names = [f"b{i}" for i in range(chance.randint(1, 4))]
        seconds = {name: chance.uniform(0.5, 40) for name in names}
        most = {name: chance.randint(1, 6) for name in names}
        cores = chance.randint(1, 14)
        threads = job_cost.share_cores(seconds, most, cores)
        assert set(threads) == set(names) and all(1 <= threads[n] <= max(1, most[n]) for n in names)
        if cores <= len(names):
            assert set(threads.values()) == {1}
            continue
        assert sum(threads.values()) == min(cores, sum(most.values()))
        every_way = [
            dict(zip(names, way))
            for way in itertools.product(*(range(1, most[n] + 1) for n in names))
            if sum(way) <= cores
        ]
        assert latest_end(seconds, threads) == pytest.approx(min(latest_end(seconds, way) for way in every_way))
    # batches alike share alike, to a core
    assert sorted(job_cost.share_cores(dict.fromkeys("abc", 10.0), dict.fromkeys("abc", 50), 16).values()) == [5, 5, 6]


def test_a_batch_is_ordered_by_what_its_jobs_recorded_and_the_model_where_a_record_is_missing(tmp_path):
    """learned_seconds: a job's run.json wall_seconds, none for a job served by another's lowering, the model's
    seconds for a job whose record is absent, unreadable or says no time."""
    grid = grid_of(modes=["trace-env", "instrument"], shapes=[{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(4)])
    (batch,) = grid.batches
    assert len(batch.jobs) == len(batch.job_seconds) == 8
    records = [tmp_path / f"{i}.json" for i in range(8)]
    env_job, served_job = batch.jobs[:2]
    assert (env_job.mode, served_job.mode) == ("trace-env", "instrument")
    records[0].write_text(
        json.dumps({"out_dir": "/a/trace-env", "lowering": {"by": "/a/trace-env"}, "wall_seconds": 4.5})
    )
    records[1].write_text(
        json.dumps({"out_dir": "/a/instrument", "lowering": {"by": "/a/trace-env"}, "wall_seconds": 4.5})
    )
    records[2].write_text("{not json")
    records[3].write_text(json.dumps({"out_dir": "/b", "wall_seconds": None}))
    records[4].write_text(json.dumps({"out_dir": "/c", "wall_seconds": 0.25}))
    expected = 4.5 + 0.0 + sum(batch.job_seconds[2:4]) + 0.25 + sum(batch.job_seconds[5:])
    assert batches.learned_seconds(batch, records) == pytest.approx(expected)
    assert batches.learned_seconds(batch, [tmp_path / "none.json"] * 8) == pytest.approx(batch.expected_seconds)


def test_each_release_has_batches_of_its_own():
    grid = grid_of(versions=["0.1.14", "0.1.15"], modes=["instrument"])
    assert [(b.name, b.version, [j.version for j in b.jobs]) for b in grid.batches] == [
        ("trace_instrument_0_1_14_gemm_cuda_sm90", "0.1.14", ["0.1.14"]),
        ("trace_instrument_0_1_15_gemm_cuda_sm90", "0.1.15", ["0.1.15"]),
    ]


def test_batch_names_say_what_the_batch_holds_and_stay_when_other_parts_of_the_grid_change(tmp_path):
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(3)]
    modes = ["trace-env", "trace-api", "instrument"]
    shared = grid_of(shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes)
    # the instrument jobs in the trace-env batch whose lowerings serve them: the name says so
    assert [b.name for b in shared.batches] == ["trace_env_instrument_0_1_15_gemm", "trace_api_0_1_15_gemm"]

    def alone(**overrides):  # each job lowering on its own: three modes, two batches
        return grid_of(share_lowering=False, **overrides)

    grid = alone(shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes)
    # release, mode (trace-env apart; one mode: its name) and the one kernel and target it holds, or none
    assert [b.name for b in grid.batches] == ["trace_env_0_1_15_gemm", "trace_0_1_15_gemm"]
    assert [b.name for b in alone(shapes=shapes, targets=["hip"], modes=["pass-diff"]).batches] == [
        "trace_pass_diff_0_1_15_gemm_hip"
    ]
    # the shapes reordered, or a kernel of the user's added: the GEMM's batches keep their names, the kernel's
    # batches are named after it
    assert [b.name for b in alone(shapes=shapes[::-1], targets=["hip", "cuda-sm90"], modes=modes).batches] == [
        "trace_env_0_1_15_gemm",
        "trace_0_1_15_gemm",
    ]
    kernels = [{"name": "my_k", "file": user_kernel(tmp_path), "params": [{}, {"N": 2}]}]
    added = alone(shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes, kernels=kernels)
    assert [b.name for b in added.batches] == [
        "trace_env_0_1_15_gemm",
        "trace_env_0_1_15_my_k",
        "trace_0_1_15_gemm",
        "trace_0_1_15_my_k",
    ]
    # one group in several batches: a part number, the same wherever the shapes are
    split = [b.name for b in alone(shapes=shapes, targets=["hip"], modes=modes, trace_batch_size=2).batches]
    assert split == ["trace_env_0_1_15_gemm_hip_1", "trace_env_0_1_15_gemm_hip_2"] + [
        f"trace_0_1_15_gemm_hip_{n}" for n in (1, 2, 3)
    ]
    again = alone(shapes=shapes[::-1], targets=["hip"], modes=modes, trace_batch_size=2)
    assert [b.name for b in again.batches] == split
    # every name a rule name of its own, short whatever the kernel's name
    long = [{"name": (string.ascii_lowercase * 8)[:200], "file": user_kernel(tmp_path), "params": [{}]}]
    names = [b.name for b in alone(shapes=shapes, targets=["hip"], modes=modes, kernels=long).batches]
    assert len(set(names)) == len(names) and all(name.isidentifier() and len(name) <= 64 for name in names)


def test_a_jobs_arguments_parse_back_to_its_spec_with_the_trace_scripts_own_parser():
    grid = grid_of(
        shapes=[{"M": 1000, "N": 512, "K": 64, "block": [64, 32, 16], "stages": 0, "dtype": "bfloat16"}],
        targets=[{"name": "sm90a", "target": {"kind": "cuda", "arch": "sm_90a"}}],
        modes=["trace-api"],
    )
    job = grid.job(INSTALLED, "sm90a", "1000x512x64_b64x32x16_bfloat16", "trace-api")
    spec = trace_cli.parse_args(shlex.split(job.command_args)).spec
    gemm = spec.provenance(INSTALLED)  # the shape's parameters, in their columns
    assert [gemm[name] for name in ("M", "N", "K", "block_M", "block_N", "block_K")] == [1000, 512, 64, 64, 32, 16]
    assert [gemm[name] for name in ("dtype", "accum_dtype", "threads", "stages")] == ["bfloat16", "float32", 128, 0]
    assert spec == job.spec
    assert spec.target == {"kind": "cuda", "arch": "sm_90a"} and spec.mode == "trace-api"
    assert spec.passes == trace_cli.DEFAULT_PASSES  # api_passes not set: the script's own default list


def test_only_modes_that_take_a_pass_list_get_one():
    grid = grid_of(modes=list(trace_modes.MODES), api_passes=["BindTarget", "Simplify"])
    for (_, _, _, mode), job in grid.jobs.items():
        has_passes = "--passes" in job.args
        assert has_passes == trace_modes.MODES[mode].takes_passes, mode
        if has_passes:
            assert job.args[job.args.index("--passes") + 1] == "BindTarget,Simplify"


def test_schema_defaults_are_filled():
    grid = grid_of()
    assert grid.shapes["256x256x256"] == {
        "M": 256,
        "N": 256,
        "K": 256,
        "block": [128, 128, 32],
        "dtype": "float16",
        "accum_dtype": "float32",
        "threads": 128,
        "stages": 3,
        "pass_configs": {},
    }


def test_versions_default_to_the_installed_release_which_needs_no_environment():
    grid = grid_of()
    assert grid.versions == (INSTALLED,) and not grid.compares_releases
    job = next(iter(grid.jobs.values()))
    assert job.release_env is None and "--release-env" not in job.args and "--keep-ir" not in job.args


def test_without_an_installed_release_the_pinned_one_gets_an_environment():
    grid = job_grid.build_grid(
        config_checks.validate_config({"targets": ["hip"], "modes": ["instrument"]}), installed=""
    )  # "" = metadata found no tilelang
    assert grid.versions == (grid_keys.pinned_release(),)
    assert grid.release_env(grid.versions[0]) == f".envs/tilelang-{grid_keys.pinned_release()}"


def test_each_other_release_runs_in_its_own_environment_and_keeps_its_ir():
    grid = grid_of(versions=["0.1.14", INSTALLED], modes=["instrument", "trace-env"], release_env_dir="/envs")
    assert grid.versions == ("0.1.14", INSTALLED) and grid.compares_releases
    old = grid.job("0.1.14", "cuda-sm90", "256x256x256", "instrument")
    assert old.release_env == "/envs/tilelang-0.1.14"
    assert old.args[old.args.index("--release-env") + 1] == "/envs/tilelang-0.1.14"
    assert "--keep-ir" in old.args  # the comparison needs the IR after every pass
    new = grid.job(INSTALLED, "cuda-sm90", "256x256x256", "trace-env")
    assert new.release_env is None and "--keep-ir" not in new.args  # trace-env keeps its own run record
    spec = trace_cli.parse_args(list(old.args)).spec
    assert spec.keep_ir and spec.mode == "instrument"


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        (["0.1.14", "0.1.5"], "config versions[1]: '0.1.5' is older than 0.1.6.post2, the oldest release the workflow"),
        (["0.1.14", "0.1.14"], "config versions[1]: release '0.1.14' is a duplicate of versions[0]"),
        (["0.1"], "config versions[0]: '0.1' is not a release of the form X.Y.Z"),
        ([0.1], "config versions[0]: 0.1 is not a release of the form X.Y.Z or X.Y.Z.postN such as '0.1.14'; quote"),
        ([], "config versions: the list is empty"),
    ],
)
def test_a_bad_release_is_named_with_the_supported_range(versions, message):
    assert refused(versions=versions).startswith(message)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"shapes": [{"M": 256, "N": 256, "K": 0}]}, "config shapes[0].K: 0 is less than the minimum of 1"),
        (
            {"shapes": [{"M": 8, "N": 8, "K": 8, "block": [128, 0, 32]}]},
            "config shapes[0].block[1]: 0 is less than the minimum of 1 (shapes[0].block = [128, 0, 32])",
        ),
        ({"shapes": [{"M": 8, "N": 8, "K": 8, "blocks": [1, 1, 1]}]}, "config shapes[0]: Additional properties"),
        ({"modes": ["trace-env", "trace-env"]}, "config modes: ['trace-env', 'trace-env'] has non-unique elements"),
        ({"bogus": 1}, "config (top level): Additional properties are not allowed ('bogus' was unexpected)"),
        (
            {"shapes": [{"M": 8, "N": 8, "K": 8, "dtype": "float17"}]},
            "config shapes[0].dtype: 'float17' is not one of " + ", ".join(trace_cli.DTYPES),
        ),
        (
            {"defaults": {"accum_dtype": "int4"}},
            "config defaults.accum_dtype: 'int4' is not one of " + ", ".join(trace_cli.ACCUM_DTYPES),
        ),
        (
            {"shapes": [{"M": 8, "N": 8, "K": 8}, {"M": 8, "N": 8, "K": 8, "stages": 1}]},
            "config shapes[1]: shape id '8x8x8' is also the id of shapes[0]; give one of them a distinct 'name'",
        ),
        (
            {"shapes": [{"M": 8, "N": 8, "K": 8}, {"M": 8, "N": 8, "K": 8, "block": [128, 128, 32]}]},
            "config shapes[1]: {'M': 8, 'N': 8, 'K': 8, 'block': [128, 128, 32]} has the same parameters as shapes[0]",
        ),
        ({"targets": ["cuda-sm90", "cuda-sm99"]}, "config targets[1]: unknown target 'cuda-sm99'; short names are"),
        (
            {"targets": [{"name": "x", "target": {"arch": "sm_90"}}]},
            "config targets[0].target: {'arch': 'sm_90'} has no \"kind\"",
        ),
        (
            {"targets": [{"name": "hip", "target": {"kind": "cuda"}}]},
            "config targets[0].name: 'hip' is the short name of {'kind': 'hip'}, not of {'kind': 'cuda'}",
        ),
        (
            {"targets": ["hip", {"name": "hip", "target": {"kind": "hip"}}]},
            "config targets[1]: duplicate target name 'hip' (also targets[0])",
        ),
        (
            {"targets": ["cuda-sm90", {"name": "sm90", "target": {"kind": "cuda", "arch": "sm_90"}}]},
            "config targets[1]: target {'kind': 'cuda', 'arch': 'sm_90'} is also targets[0]; the two targets' jobs "
            "would be identical",
        ),
        (
            {"targets": [{"name": "gpu", "target": {"kind": "cuda-gpu", "arch": "sm_90"}}]},
            "config targets[0].target.kind: unknown target kind 'cuda-gpu'; TVM's kinds are cuda,",
        ),
        ({"book_figure_width_cm": float("nan")}, "config book_figure_width_cm: nan is not a finite number"),
        ({"shapes": [{"M": 8, "N": 8, "K": float("inf")}]}, "config shapes[0].K: inf is not a finite number"),
        (
            {"release_env_dir": ".envs/{version}"},
            "config release_env_dir: '.envs/{version}' holds '{', '}'; a folder path here may not hold braces",
        ),
        ({"release_env_dir": "a\nb"}, "config release_env_dir: 'a\\nb' holds '\\n'"),
        (
            {"modes": ["trace-env", "trace-everything"]},
            "config modes[1]: unknown mode 'trace-everything'; modes are " + ", ".join(trace_modes.MODES),
        ),
        ({"trace_batch_size": 0}, "config trace_batch_size: 0 is less than the minimum of 1"),
        ({"job_figures": "no"}, "config job_figures: 'no' is not of type 'boolean'"),
    ],
)
def test_each_bad_value_is_named_with_its_key(overrides, message):
    assert refused(**overrides).startswith(message)


@pytest.mark.parametrize(
    ("overrides", "key", "value"),
    [
        ({"shapes": [{"M": 256.0, "N": 256, "K": 256}]}, "shapes[0]", "256.0,256,256"),
        ({"shapes": [{"M": 99999999999999999999, "N": 1, "K": 1}]}, "shapes[0]", "99999999999999999999,1,1"),
        ({"defaults": {"threads": 128.0}}, "defaults.threads", "128.0"),
        ({"shapes": [{"M": 8, "N": 8, "K": 8, "stages": 2.0}]}, "shapes[0].stages", "2.0"),
        ({"shapes": [{"M": 8, "N": 8, "K": 8, "block": [64, 64.0, 32]}]}, "shapes[0].block", "64,64.0,32"),
    ],
)
def test_the_config_check_refuses_what_the_trace_script_would(overrides, key, value, capsys):
    """The schema takes 256.0 for an integer and has no int64 bound; the trace script's own argument rules
    refuse both, and the config check runs every configuration through those same rules, before any job."""
    message = refused(**overrides)
    assert message.startswith(f"config {key}: argument ")
    assert repr(value) in message
    # the same words the trace script prints when it is given that job's arguments
    grid_args = message.split(": ", 1)[1].split(" (the job of shape")[0]
    cfg = {"shapes": [{"M": 8, "N": 8, "K": 8}], "targets": ["cuda-sm90"], "modes": ["trace-env"]}
    cfg.update(copy.deepcopy(overrides))
    shape = next(iter(grid_keys.resolve_shapes(config_checks.validate_config(cfg)).values()))
    target = trace_cli.TARGETS["cuda-sm90"]
    spec = JobSpec(**job_grid.gemm_fields(shape), target_name="cuda-sm90", target=target, mode="trace-env")
    args = trace_cli.job_argv(spec)
    with pytest.raises(SystemExit) as exited:
        trace_cli.parse_args(list(args))
    assert exited.value.code == trace_cli.EXIT_BAD_ARGUMENTS
    assert capsys.readouterr().err.strip().endswith(grid_args)


def test_a_named_target_is_called_by_its_config_name_in_the_tables():
    grid = grid_of(targets=[{"name": "my-h100", "target": {"kind": "cuda", "arch": "sm_90"}}, "hip"])
    my_args = grid.jobs[(INSTALLED, "my-h100", "256x256x256", "trace-env")].args
    spec = trace_cli.parse_args(list(my_args)).spec
    assert (spec.target_name, spec.target) == ("my-h100", {"kind": "cuda", "arch": "sm_90"})
    assert (
        trace_cli.parse_args(list(grid.jobs[(INSTALLED, "hip", "256x256x256", "trace-env")].args)).spec.target_name
        == "hip"
    )


@pytest.mark.skipif(importlib.util.find_spec("tilelang") is None, reason="the kinds come from TVM itself")
def test_the_target_kinds_are_tvms_own():
    import subprocess
    import sys

    code = "import tilelang, tvm; print(' '.join(tvm.target.Target.list_kinds()))"
    kinds = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert set(trace_cli.TARGET_KINDS) == kinds - {"test", "composite", "ext_dev"}


@pytest.mark.skipif(importlib.util.find_spec("tilelang") is None, reason="pass names resolve against TileLang's source")
def test_an_unknown_api_pass_is_named():
    assert refused(modes=["trace-api"], api_passes=["BindTarget", "NoSuchPass"]).startswith(
        "config api_passes: unknown pass 'NoSuchPass'; passes that resolve:"
    )
    grid_of(modes=["trace-env"], api_passes=["NoSuchPass"])  # no mode runs the list: nothing to check


def test_the_cli_prints_one_line_per_job(tmp_path, capsys):
    command = entry("job_grid")  # scripts/job_grid.py
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"shapes": [{"M": 8, "N": 8, "K": 8}], "targets": ["hip"], "modes": ["pass-diff"]}))
    assert command.main([str(config)]) == 0
    assert capsys.readouterr().out.split(": ", 1)[1].startswith("--mode pass-diff --shape 8,8,8")
    config.write_text(json.dumps({"targets": ["cuda-sm99"]}))
    assert command.main([str(config)]) == 2
    assert "config targets[0]: unknown target 'cuda-sm99'" in capsys.readouterr().err
    # --help is no config file, and a config that cannot be read is named, without a traceback
    assert command.main(["--help"]) == 0 and capsys.readouterr().out.startswith("usage: job_grid.py CONFIG.yaml")
    assert command.main([str(tmp_path / "missing.yaml")]) == 2
    assert f"cannot read the config '{tmp_path / 'missing.yaml'}'" in capsys.readouterr().err


# ------------------------------------------------------------------------- issue 29: names, paths, booleans


def user_kernel(tmp_path, source="def build(N=1, tag='x'):\n    pass\n"):
    """A kernel file of the user's: its signature is read from the source, never imported by the grid."""
    path = tmp_path / "k.py"
    path.write_text(source)
    return str(path)


def test_a_long_parameter_gets_a_short_stable_folder_and_keeps_its_full_value(tmp_path):
    file = user_kernel(tmp_path)
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    kernels = [{"name": "k", "file": file, "params": [{"tag": long_a}, {"tag": long_b}, {"tag": "short"}]}]
    grid = grid_of(shapes=[], kernels=kernels)
    folders = list(grid.kernel_configs)
    assert folders[2] == "k_tagshort"  # short ones as before
    assert len(set(folders)) == 3 and all(len(folder) == kernel_module().MAX_FOLDER_ID for folder in folders[:2])
    assert folders[0].startswith("k_tagaaaa") and folders == list(grid_of(shapes=[], kernels=kernels).kernel_configs)
    # the tables get the whole value: it is in the job's --params, the folder only names the files
    assert [grid.kernel_configs[f].params["tag"] for f in folders[:2]] == [long_a, long_b]
    job = grid.job(INSTALLED, "cuda-sm90", folders[0], "trace-env")
    assert json.loads(job.args[job.args.index("--params") + 1]) == {"tag": long_a}
    for path in config_checks.NAMED_PATHS:
        for part in path.format(**job.wildcards, kernel="k").split("/"):
            assert len(part.encode()) <= config_checks.MAX_NAME_BYTES


def kernel_module():
    from tilelang_churn.kernel import kernels

    return kernels


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"shapes": [{"M": 8, "N": 8, "K": 8, "name": "s" * 300}]},
            f"config shapes[0].name: {'s' * 40!r}...{'s' * 20!r} (300 characters) makes the file name",
        ),
        ({"targets": [{"name": "t" * 250, "target": {"kind": "cuda"}}]}, "config targets[0].name: "),
    ],
)
def test_a_value_too_long_for_a_file_name_is_refused_at_the_config_check(overrides, message):
    text = refused(**overrides)
    assert text.startswith(message) and f"file names may have at most {config_checks.MAX_NAME_BYTES}" in text


def test_a_kernel_name_or_folder_too_long_is_refused_naming_its_key(tmp_path):
    file = user_kernel(tmp_path)
    assert refused(kernels=[{"name": "k" * 240, "file": file, "params": [{}]}]).startswith("config kernels[0].name: ")
    assert refused(kernels=[{"name": "k", "file": file, "params": [{}], "folders": ["f" * 240]}]).startswith(
        "config kernels[0].folders[0]: "
    )


def test_braces_in_a_kernel_file_path_are_named_with_the_key(tmp_path):
    braced = tmp_path / "k{x}.py"
    braced.write_text("def build(N=1):\n    pass\n")
    assert refused(kernels=[{"name": "k", "file": str(braced), "params": [{}]}]).startswith(
        f"config kernels[0].file: {str(braced)!r} holds '{{', '}}'; a kernel file path here may not hold braces"
    )


def test_two_parameter_sets_on_one_folder_are_named_and_a_folder_name_separates_them(tmp_path):
    file = user_kernel(tmp_path)
    sets = [{"N": 2}, {"tag": "a/b"}, {"tag": "ab"}]
    assert refused(kernels=[{"name": "k", "file": file, "params": sets}]) == (
        "config kernels[0].params[2]: kernel 'k': {'tag': 'ab'} gets the folder 'k_tagab', as kernels[0].params[1] "
        "does; name one of them with kernels[0].folders (a folder name per parameter set, null: the derived one)"
    )
    grid = grid_of(shapes=[], kernels=[{"name": "k", "file": file, "params": sets, "folders": [None, None, "k_ab"]}])
    assert {f: c.params for f, c in grid.kernel_configs.items()} == {
        "k_N2": {"N": 2},
        "k_tagab": {"tag": "a/b"},
        "k_ab": {"tag": "ab"},
    }
    # the default written out is the same parameter set: those jobs would be identical
    assert refused(kernels=[{"name": "k", "file": file, "params": [{}, {"N": 1}]}]).startswith(
        "config kernels[0].params[1]: kernel 'k': {'N': 1} is the same parameter set as kernels[0].params[0] "
        "(function defaults included); the two jobs would be identical"
    )
    assert refused(kernels=[{"name": "k", "file": file, "params": [{}], "folders": ["a", "b"]}]).startswith(
        "config kernels[0].folders: 2 folder names for 1 parameter sets"
    )
    assert refused(kernels=[{"name": "k", "file": file, "params": [{}], "folders": ["256x256x256"]}]).startswith(
        "config kernels[0].folders[0]: kernel 'k': {} gets the folder '256x256x256', as shapes[0] does"
    )


def _patterns(node, path=""):
    if isinstance(node, dict):
        if "pattern" in node:
            yield path, node["pattern"]
        for key, value in node.items():
            yield from _patterns(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _patterns(value, f"{path}/{i}")


def test_every_schema_pattern_refuses_a_final_newline():
    import re

    import yaml

    schema = yaml.safe_load(config_checks.SCHEMA.read_text())
    patterns = list(_patterns(schema))
    assert len(patterns) >= 4
    for where, pattern in patterns:
        example = next(word for word in ("build", "a1", "A_b", "tl.a") if re.search(pattern, word))  # a value it takes
        assert re.search(pattern, example + "\n") is None, where  # jsonschema searches: $ matched before a "\n"
    assert refused(shapes=[{"M": 8, "N": 8, "K": 8, "name": "sh\n"}]).startswith(
        "config shapes[0].name: 'sh\\n' does not match"
    )
    assert refused(api_passes=["Simplify\n"]).startswith("config api_passes[0]: 'Simplify\\n' does not match")


def test_file_and_shipped_both_is_said_in_words(tmp_path):
    entry = {"name": "k", "file": user_kernel(tmp_path), "shipped": "rmsnorm", "params": [{}]}
    assert refused(kernels=[entry]) == (
        f"config kernels[0]: gives both ({entry['file']!r}, 'rmsnorm'); give file or shipped, not both"
    )
    assert refused(kernels=[{"name": "k", "params": [{}]}]) == (
        "config kernels[0]: gives neither; give file or shipped, not both"
    )


def test_every_boolean_key_takes_true_and_false_from_the_command_line():
    import yaml

    schema = yaml.safe_load(config_checks.SCHEMA.read_text())
    booleans = [key for key, spec in schema["properties"].items() if spec.get("type") == "boolean"]
    assert {"gpu", "fail_on_pass_error", "job_figures"} <= set(booleans)
    for key in booleans:
        for text, value in (("true", True), ("False", False)):
            cfg = {key: text, "figure_language": "true"}  # not a boolean key: left for the schema to judge
            assert config_schema.coerce_booleans(cfg, {key: text}) == {key: value, "figure_language": "true"}
            assert config_checks.validate_config(config_schema.coerce_booleans({key: text}))[key] is value
    # a string in a config file (not given on the command line) stays the schema's to refuse
    assert config_schema.coerce_booleans({"job_figures": "false"}, {}) == {"job_figures": "false"}
    assert refused(job_figures="no").startswith("config job_figures: 'no' is not of type 'boolean'")


def test_a_long_list_in_a_message_is_its_count_and_the_first_few():
    assert config_checks.some(["a", "b"], "shapes") == "shapes ['a', 'b']"
    names = [f"{64 * (i + 1)}x64x64" for i in range(10_000)]
    text = config_checks.some(names, "shapes")
    assert text == "10000 shapes, the first 5 ['64x64x64', '128x64x64', '192x64x64', '256x64x64', '320x64x64']"


@pytest.mark.integration
def test_the_book_reference_warning_of_a_large_grid_names_a_few_shapes(tmp_path):
    import yaml
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path / "wf")
    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(40)]
    grid = {"shapes": shapes, "targets": ["hip"], "modes": ["instrument"], "kernels": [], "job_figures": False}
    (workdir / "config" / "grid.yaml").write_text(yaml.safe_dump(grid))
    proc = snakemake(workdir, "-n", "--quiet", "rules", "--configfile", "config/grid.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    warning = next(line for line in (proc.stdout + proc.stderr).splitlines() if "is not in the job grid" in line)
    assert "targets ['hip'], 40 shapes, the first 5 ['64x64x64', '128x64x64'," in warning
    assert "2560x64x64" not in warning


def test_the_release_heatmap_defaults_to_the_books_reference_and_a_bad_choice_is_named():
    grid = grid_of(shapes=[{"M": 1024, "N": 1024, "K": 1024}], modes=["trace-env", "instrument"])
    assert grid.release_heatmap == ("cuda-sm90", "1024x1024x1024", "instrument")
    assert grid_of(modes=["trace-env"]).release_heatmap is None  # the reference shape is not in this grid
    chosen = grid_of(release_heatmap={"shape": "256x256x256"}).release_heatmap
    assert chosen == ("cuda-sm90", "256x256x256", "trace-env")
    assert refused(release_heatmap={"mode": "pass-diff"}).startswith(
        "config release_heatmap.mode: 'pass-diff' is not in the grid; it has mode ['trace-env']"
    )


# ------------------------------------------------------------------------------------- round four (issue 43)

SMALL = {"shapes": [{"M": 64, "N": 64, "K": 64}], "targets": ["cuda-sm90"], "modes": ["instrument"]}


def test_a_duration_longer_than_the_timers_can_wait_is_refused_naming_key_and_value():
    """job_timeout_s: 1e300 passed the check, then the batch died in select() (OverflowError: time_t)."""
    import yaml
    from tilelang_churn.core import jobs

    for overrides, key in [
        ({"job_timeout_s": 1e300}, "job_timeout_s"),
        ({"job_timeout_s": jobs.LONGEST_TIMEOUT_S + 1}, "job_timeout_s"),
        ({"knockout": {"timeout_s": 1.0e300}}, "knockout.timeout_s"),
        ({"gpu_timeout_s": 1.0e300}, "gpu_timeout_s"),
    ]:
        with pytest.raises(ConfigError, match=rf"config {key}: .* is greater than the maximum of 604800"):
            config_checks.validate_config(copy.deepcopy({**SMALL, **overrides}))
    config_checks.validate_config(copy.deepcopy({**SMALL, "job_timeout_s": jobs.LONGEST_TIMEOUT_S}))
    schema = yaml.safe_load(config_checks.SCHEMA.read_text())["properties"]
    assert schema["job_timeout_s"]["maximum"] == jobs.LONGEST_TIMEOUT_S
    assert schema["gpu_timeout_s"]["maximum"] == jobs.LONGEST_TIMEOUT_S
    knockout = next(branch for branch in schema["knockout"]["oneOf"] if "properties" in branch)
    assert knockout["properties"]["timeout_s"]["maximum"] == jobs.LONGEST_TIMEOUT_S
    for text in ("1e300", str(jobs.LONGEST_TIMEOUT_S + 1)):  # the batch script's own option, the same limit
        with pytest.raises(Exception, match="longer than the longest time limit"):
            trace_batch.positive_seconds(text)


@pytest.mark.parametrize("knockout", [False, True])
def test_an_empty_grid_is_refused_at_the_config_check(knockout):
    """shapes: [] and kernels: [] raised IndexError while the DAG was built (with the knockout), or failed later in
    churn_table ("no passes.csv given")."""
    cfg = config_checks.validate_config({"shapes": [], "kernels": [], "knockout": knockout})
    with pytest.raises(ConfigError, match=r"config shapes and kernels: the grid is empty"):
        job_grid.build_grid(cfg, installed="0.1.15")


def test_a_mapping_on_the_command_line_reaches_the_schema_for_every_key():
    """--config 'release_heatmap={mode: instrument}' raised TypeError (unhashable type: 'list') while the command
    line's values were coerced: a key whose type is a list of types. Every key of the schema, given a mapping."""
    import yaml

    properties = yaml.safe_load(config_checks.SCHEMA.read_text())["properties"]
    for key in properties:
        given = {key: {"mode": "instrument", "timeout_s": "30"}}
        config_schema.coerce_booleans(copy.deepcopy(given), given)  # no crash, whatever the key's type
    cfg = config_checks.validate_config(copy.deepcopy({**SMALL, "release_heatmap": {"mode": "instrument"}}))
    assert cfg["release_heatmap"]["mode"] == "instrument"
    given = {"knockout": {"timeout_s": "30"}}  # a number's text inside a mapping still becomes the number
    assert config_schema.coerce_booleans(copy.deepcopy(given), given)["knockout"]["timeout_s"] == 30.0


def test_a_number_inside_a_command_line_mapping_is_a_number_wherever_it_sits():
    """Snakemake reads a --config value's scalars as strings: `kernels=[{..., params: [{N: 1152}]}]` traced N="1152"
    (a failed row), `defaults={stages: 2}` was refused as "'2' is not of type 'integer'". The values as YAML
    means them, read here as Snakemake's own parser hands them over; text the schema takes as text stays text."""
    from snakemake.cli import parse_config

    given = parse_config(
        [
            "kernels=[{name: k, shipped: flash_attention, params: [{seq_q: 128, dtype: float16, is_causal: true}],"
            " folders: ['128']}]",
            "defaults={stages: 2, block: [64, 64, 32], pass_configs: [{tl.config_index_bitwidth: 32}]}",
            "shapes=[{M: 64, N: 64, K: 64, name: '256'}]",
        ]
    )
    assert given["kernels"][0]["params"][0]["seq_q"] == "128"  # what Snakemake hands over
    cfg = config_schema.coerce_booleans(copy.deepcopy(given), given)
    assert cfg["kernels"][0]["params"] == [{"seq_q": 128, "dtype": "float16", "is_causal": True}]
    assert cfg["kernels"][0]["folders"] == ["128"] and cfg["shapes"][0]["name"] == "256"  # names stay text
    assert cfg["defaults"]["stages"] == 2 and cfg["defaults"]["block"] == [64, 64, 32]
    assert cfg["defaults"]["pass_configs"] == [{"tl.config_index_bitwidth": 32}]
    grid = job_grid.build_grid(config_checks.validate_config({**SMALL, **cfg}), installed="0.1.15")
    (kernel,) = [spec for (_, _, shape), spec in grid.lowerings.items() if spec.kernel == "k"]
    assert kernel.params == {"seq_q": 128, "dtype": "float16", "is_causal": True}


@pytest.mark.parametrize(
    "overrides, says",
    [
        ({"versions": "0.1.15"}, "config versions: '0.1.15' is none of what it takes: null; a list (as a list: "
         "['0.1.15'])"),
        ({"knockout": "yes"}, "config knockout: 'yes' is none of what it takes: true or false; a mapping of passes, "),
        ({"knockout": {"passes": "Simplify"}}, "config knockout.passes: 'Simplify' is none of what it takes: 'changed' "
         "or 'all'; a list (as a list: ['Simplify'])"),
        ({"kernels": [{"name": "k", "shipped": "rmsnorm", "params": "auto"}]}, "config kernels[0].params: 'auto' is "
         "none of what it takes: a list; 'autotune'; a mapping"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_kind_is_told_what_the_key_takes(overrides, says):
    """Round four: `knockout: "yes"` said only "not of type 'boolean'" (it may also be a mapping), `passes: Simplify`
    did not say a list is taken, `versions=0.1.15` said "not of type 'null'". A value no alternative takes is told
    every alternative, and a single value where a list is taken is shown as that list."""
    assert refused(**overrides).startswith(says)


@pytest.mark.parametrize(
    "sets",
    [
        [{}, {"tir.disable_vectorize": True}, {"tirx.disable_vectorize": True}],
        [{"tl.layout_visualization_formats": ["png", "svg"]}, {"tl.layout_visualization_formats": ["png", " svg"]}],
    ],
)
def test_two_pass_config_sets_on_one_folder_are_refused_with_advice_that_can_be_followed(sets):
    """Round four: two sets that differ only in a key's namespace, or in spaces of a list value, got one folder,
    and the advice "give one of them a distinct name" could not be followed (both come from one shape)."""
    said = refused(defaults={"pass_configs": sets})
    assert said.startswith("config defaults.pass_configs[") and "keep one of them" in said
    assert "distinct 'name'" not in said


def test_a_kernel_entry_with_its_own_targets_runs_on_those_alone():
    """Issue 60: a Blackwell-only kernel beside Hopper ones. The entry's targets replace config targets for its
    jobs; a name both lists use is the same target; a target no job has is left out of the grid."""
    blackwell = {"name": "bw", "shipped": "rmsnorm", "params": [{"M": 256, "N": 256}], "targets": ["cuda-sm100a"]}
    hopper = {"name": "hp", "shipped": "rmsnorm", "params": [{"M": 128, "N": 256}]}
    both = {"name": "both", "shipped": "rmsnorm", "params": [{"M": 64, "N": 256}],
            "targets": ["cuda-sm90", {"name": "b200", "target": {"kind": "cuda", "arch": "sm_100"}}]}  # fmt: skip
    grid = grid_of(kernels=[blackwell, hopper, both], targets=["cuda-sm90", "hip"])
    by_kernel: dict[str, list[str]] = {}
    for (_, target, _, _), job in grid.jobs.items():
        by_kernel.setdefault(job.spec.kernel, []).append(target)
    assert by_kernel == {
        "gemm": ["cuda-sm90", "hip"], "hp": ["cuda-sm90", "hip"], "both": ["cuda-sm90", "b200"], "bw": ["cuda-sm100a"]
    }  # fmt: skip
    assert list(grid.targets) == ["cuda-sm90", "hip", "cuda-sm100a", "b200"]
    assert grid.targets["cuda-sm100a"] == {"kind": "cuda", "arch": "sm_100a"}
    assert grid.target_keys["b200"] == "kernels[2].targets[1]" and grid.target_keys["cuda-sm90"] == "targets[0]"
    assert {target for (_, target, _) in grid.lowerings} == set(grid.targets)
    # only kernels of their own targets: config targets (the default three) have no job and are left out
    alone = grid_of(shapes=[], kernels=[blackwell])
    # the release heatmap's configuration is one a target has: bw has no job on cuda-sm90
    heatmap = {"target": "cuda-sm90", "shape": next(c for c in grid.configurations if c.startswith("bw"))}
    said = refused(kernels=[blackwell, hopper, both], targets=["cuda-sm90", "hip"], release_heatmap=heatmap)
    assert said == f"config release_heatmap: {heatmap['shape']!r} has no job on target 'cuda-sm90'"
    assert list(alone.targets) == ["cuda-sm100a"] and len(alone.jobs) == 1
    # one name, one target; a target under two names would trace the same jobs twice
    other = {"name": "cuda-sm90", "target": {"kind": "cuda", "arch": "sm_90a"}}
    said = refused(kernels=[{**blackwell, "targets": [{"name": "sm90", "target": {"kind": "cuda", "arch": "sm_90"}}]}])
    assert said.startswith("config kernels[0].targets[0]: target {'kind': 'cuda', 'arch': 'sm_90'} is also targets[0]")
    said = refused(kernels=[{**blackwell, "targets": [other]}])
    assert said.startswith("config kernels[0].targets[0].name: 'cuda-sm90' is the short name of")
    said = refused(kernels=[{**blackwell, "targets": [{"name": "x", "target": {"kind": "cuda", "arch": "sm_90a"}}]}],
                   targets=[{"name": "x", "target": {"kind": "cuda", "arch": "sm_80"}}])  # fmt: skip
    assert (
        "target 'x' is {'kind': 'cuda', 'arch': 'sm_90a'} here and {'kind': 'cuda', 'arch': 'sm_80'} in targets[0]"
        in said
    )
    assert refused(kernels=[{**blackwell, "targets": ["cuda-sm200"]}]).startswith(
        "config kernels[0].targets[0]: unknown target 'cuda-sm200'; short names are"
    )
