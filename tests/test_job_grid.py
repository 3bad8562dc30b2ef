"""scripts/job_grid.py on its own: the jobs a config asks for, and every validation message."""

from __future__ import annotations

import copy
import importlib.util
import json
import shlex

import pytest
from tilelang_churn.core import trace_modes
from tilelang_churn.lowering import job_grid, trace_cli
from tilelang_churn.lowering.job_grid import ConfigError

INSTALLED = "0.1.15"


def grid_of(installed=INSTALLED, **overrides):
    cfg = {"shapes": [{"M": 256, "N": 256, "K": 256}], "targets": ["cuda-sm90"], "modes": ["trace-env"]}
    cfg.update(copy.deepcopy(overrides))
    return job_grid.build_grid(job_grid.validate_config(cfg), installed=installed)


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
    grid = grid_of(shapes=shapes, targets=["hip", "cuda-sm90"], modes=modes, trace_batch_size=5)
    batched = [job for batch in grid.batches for job in batch.jobs]
    assert sorted(batched, key=list(grid.jobs.values()).index) == list(grid.jobs.values())  # each job once
    assert len(set(batched)) == len(grid.jobs) == 42
    for batch in grid.batches:
        assert 1 <= len(batch.jobs) <= 5 and batch.name.isidentifier()
        assert {job.version for job in batch.jobs} == {batch.version}
        assert {job.mode == "trace-env" for job in batch.jobs} == {batch.lower_trace_env}
    # 14 trace-env jobs in batches of 5, 5, 4; then the 28 others: 5 x 5 and 3
    assert [len(b.jobs) for b in grid.batches] == [5, 5, 4, 5, 5, 5, 5, 5, 3]
    assert [b.name for b in grid.batches][:4] == [
        "trace_env_0_1_15_1",
        "trace_env_0_1_15_2",
        "trace_env_0_1_15_3",
        "trace_0_1_15_1",
    ]


def test_a_grid_without_trace_env_has_no_trace_env_batch_and_the_default_size_is_50():
    grid = grid_of(modes=["trace-api", "pass-diff"], shapes=[{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(30)])
    assert [(b.name, len(b.jobs)) for b in grid.batches] == [("trace_0_1_15_1", 50), ("trace_0_1_15_2", 10)]


def test_each_release_has_batches_of_its_own():
    grid = grid_of(versions=["0.1.14", "0.1.15"], modes=["instrument"])
    assert [(b.name, b.version, [j.version for j in b.jobs]) for b in grid.batches] == [
        ("trace_0_1_14_1", "0.1.14", ["0.1.14"]),
        ("trace_0_1_15_1", "0.1.15", ["0.1.15"]),
    ]


def test_a_jobs_arguments_parse_back_to_its_spec_with_the_trace_scripts_own_parser():
    grid = grid_of(
        shapes=[{"M": 1000, "N": 512, "K": 64, "block": [64, 32, 16], "stages": 0, "dtype": "bfloat16"}],
        targets=[{"name": "sm90a", "target": {"kind": "cuda", "arch": "sm_90a"}}],
        modes=["trace-api"],
    )
    job = grid.job(INSTALLED, "sm90a", "1000x512x64_b64x32x16_bfloat16", "trace-api")
    spec = trace_cli.parse_args(shlex.split(job.command_args)).spec
    gemm = spec.gemm
    assert [gemm[name] for name in ("M", "N", "K", "block_M", "block_N", "block_K")] == [1000, 512, 64, 64, 32, 16]
    assert [gemm[name] for name in ("dtype", "accum_dtype", "threads", "stages")] == ["bfloat16", "float32", 128, 0]
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
    }


def test_versions_default_to_the_installed_release_which_needs_no_environment():
    grid = grid_of()
    assert grid.versions == (INSTALLED,) and not grid.compares_releases
    job = next(iter(grid.jobs.values()))
    assert job.release_env is None and "--release-env" not in job.args and "--keep-ir" not in job.args


def test_without_an_installed_release_the_pinned_one_gets_an_environment():
    grid = job_grid.build_grid(
        job_grid.validate_config({"targets": ["hip"], "modes": ["instrument"]}), installed=""
    )  # "" = metadata found no tilelang
    assert grid.versions == (job_grid.pinned_release(),)
    assert grid.release_env(grid.versions[0]) == f".envs/tilelang-{job_grid.pinned_release()}"


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
        (["0.1.14", "0.1.7"], "config versions[1]: '0.1.7' is older than the supported range 0.1.8 to 0.1.15"),
        (["0.1.14", "0.1.14"], "config versions[1]: '0.1.14' is a duplicate of versions[0]"),
        (["0.1"], "config versions[0]: '0.1' is not a release of the form X.Y.Z"),
        (["0.1.99"], "config versions[0]: '0.1.99' is not a known TileLang release"),
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
    spec = job_grid.resolve_shapes(job_grid.validate_config(cfg))
    args = job_grid.trace_args(
        job_grid.gemm_arguments(next(iter(spec.values()))), ("--target", "cuda-sm90"), "trace-env", ()
    )
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
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"shapes": [{"M": 8, "N": 8, "K": 8}], "targets": ["hip"], "modes": ["pass-diff"]}))
    assert job_grid.main([str(config)]) == 0
    assert capsys.readouterr().out.split(": ", 1)[1].startswith("--mode pass-diff --shape 8,8,8")
    config.write_text(json.dumps({"targets": ["cuda-sm99"]}))
    assert job_grid.main([str(config)]) == 2
    assert "config targets[0]: unknown target 'cuda-sm99'" in capsys.readouterr().err
