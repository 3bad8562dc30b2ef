"""Kernels as TileLang users write them, traced unchanged: @tilelang.jit lazy and eager, @autotune over it, a
module-level @T.prim_func, several kernels in one file, a tuple and a dtype object as parameters, a dynamic shape,
a decorator's pass_configs, and a file that needs a GPU at import (tests/data/kernel_styles/, written for these
tests in the styles of TileLang's examples).

The workflow run here (`styles_run`) traces them for real; each trace-env job's rows are compared with TileLang's
own report, and what the config check reads from the source with what TileLang's own objects say.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_workdir, require_tilelang, snakemake, trace_batch_counts
from test_trace_env import report_passes, report_view
from tilelang_churn.core import passes_table
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.grid.config_checks import ConfigError
from tilelang_churn.kernel import kernel_probe, kernel_source, kernels
from tilelang_churn.releases import kernel_requirements
from tilelang_churn.tables import frames

DATA = REPO / "tests" / "data" / "kernel_styles"
USER_DIR = "../my kernels"  # the user's folder, beside the working directory
MATMUL = {"M": 128, "N": 128, "K": 128, "block_M": 64, "block_N": 64, "block_K": 32}


def styles_config() -> dict:
    styles, gpu, persistent = (f"{USER_DIR}/{name}.py" for name in ("styles", "gpu_at_import", "persistent"))
    return {
        "shapes": [],
        "targets": ["cuda-sm90"],
        "modes": ["trace-env", "instrument"],
        "job_figures": False,  # what is checked here is the rows; the job figures are test_kernels.py's
        "heatmap_formats": ["png"],
        "kernels": [
            {
                "name": "styles",
                "file": styles,
                "function": ["lazy_scale", "eager_matmul", "dynamic_copy", "fixed_negate"],
                "defaults": {"N": 128},  # shared by the functions that take N; fixed_negate takes none
                "params": {
                    "lazy_scale": [{"M": 128, "N": 128}, {"M": 128, "N": 128, "block": [64, 64], "dtype": "T.float32"}],
                    "eager_matmul": [MATMUL],
                    "dynamic_copy": [{"N": 256}],
                },
            },
            {
                "name": "tuned",
                "file": styles,
                "function": "tuned_add",
                "defaults": {"M": 128, "N": 128},
                "params": "autotune",
            },  # fmt: skip
            {
                "name": "matmul_ws",
                "file": styles,
                "function": "eager_matmul",
                "params": [MATMUL],
                "pass_configs": [{"tl.disable_warp_specialized": False}],
            },  # fmt: skip
            {"name": "needs_gpu", "file": gpu, "function": "copy", "params": [{"N": 128}]},
            # sized from the GPU: built as if on an H100 and on a B200 (tests/test_device_profiles.py)
            {
                "name": "persistent",
                "file": persistent,
                "function": "persistent_scale",
                "params": [{}],
                "device": "H100",
            },
            {
                "name": "persistent_b200",
                "file": persistent,
                "function": "persistent_scale",
                "params": [{}],
                "device": "B200",
            },
            # a package the workflow lacks, installed for it alone
            {
                "name": "transpose",
                "file": f"{USER_DIR}/needs_package.py",
                "function": "transpose",
                "params": [{}],
                "requirements": ["einops"],
            },  # fmt: skip
        ],
    }


@pytest.fixture(scope="session")
def styles_run(tmp_path_factory):
    require_tilelang()
    root = tmp_path_factory.mktemp("styles")
    shutil.copytree(DATA, root / "my kernels")
    workdir = make_workdir(root / "wf")
    (workdir / "config" / "styles.yaml").write_text(yaml.safe_dump(styles_config()))
    proc = snakemake(workdir, "--cores", "2", "--configfile", "config/test_config.yaml", "config/styles.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return workdir, proc


def run_dirs(workdir: Path, mode: str) -> dict[str, Path]:
    return {path.parent.name: path for path in (workdir / "results" / "runs").glob(f"*/cuda-sm90/*/{mode}")}


@pytest.mark.slow
def test_every_style_traces_unchanged_with_rows_equal_tilelangs_own_report(styles_run):
    workdir, _ = styles_run
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    assert set(churn["kernel"]) == {
        "styles.lazy_scale", "styles.eager_matmul", "styles.dynamic_copy", "styles.fixed_negate", "tuned",
        "matmul_ws", "needs_gpu", "persistent", "persistent_b200", "transpose",
    }  # fmt: skip
    traced = {folder: out for folder, out in run_dirs(workdir, "trace-env").items() if folder != "needs_gpu_N128"}
    assert len(traced) == 2 + 1 + 1 + 1 + 4 + 1 + 2 + 1
    for folder, out in traced.items():
        rows = passes_table.read_rows(out / "passes.csv")
        assert not [row for row in rows if row["status"] == passes_table.STATUS_FAILED], folder
        shown = report_passes(Path(json.loads((out / "run.json").read_text())["run_record"]) / "report.html")
        assert [report_view(row) for row in rows] == [
            {k: p.get(k) for k in ("idx", "label", "phase", "status", "add", "del")} for p in shown
        ], folder
        assert sum(row["status"] == "changed" for row in rows) > 5, folder


@pytest.mark.slow
def test_the_kernels_own_pass_configs_are_its_jobs_and_a_config_set_wins_over_them(styles_run):
    workdir, proc = styles_run
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    own = churn[churn["kernel"] == "styles.eager_matmul"]
    overridden = churn[churn["kernel"] == "matmul_ws"]
    assert set(own["pass_configs"]) == {'{"tl.disable_warp_specialized":true}'}  # the decorator's, unasked
    assert set(overridden["pass_configs"]) == {'{"tl.disable_warp_specialized":false}'}
    assert "sets tl.disable_warp_specialized=False over kernel 'matmul_ws''s own pass_configs" in proc.stderr
    # the setting reaches the lowering: TileLang's own reports (compared above) of the two differ
    dirs = run_dirs(workdir, "trace-env")
    views = [
        [report_view(row) for row in passes_table.read_rows(dirs[folder] / "passes.csv")]
        for folder in dirs
        if folder.startswith(("styles.eager_matmul", "matmul_ws"))
    ]
    assert len(views) == 2 and views[0] != views[1]


@pytest.mark.slow
def test_params_autotune_expands_to_the_kernels_own_configs(styles_run):
    workdir, _ = styles_run
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    traced = {json.dumps({k: v for k, v in json.loads(p).items() if k not in ("M", "N")}, sort_keys=True)
              for p in churn.loc[churn["kernel"] == "tuned", "params"]}  # fmt: skip
    module = kernels.load_module(DATA / "styles.py")
    assert traced == {json.dumps(config, sort_keys=True) for config in module.tuned_add.configs}
    assert len(traced) == len(module.tile_configs())


@pytest.mark.slow
def test_a_file_that_needs_a_gpu_at_import_is_one_failed_row_naming_file_line_and_cause(styles_run):
    workdir, proc = styles_run
    for mode in ("trace-env", "instrument"):
        (row,) = passes_table.read_rows(run_dirs(workdir, mode)["needs_gpu_N128"] / "passes.csv")
        assert row["status"] == passes_table.STATUS_FAILED and "\n" not in row["error"]
        assert "gpu_at_import.py needs a GPU, which this machine lacks (gpu_at_import.py, line 5: " in row["error"]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_package_the_workflow_lacks_is_installed_for_the_kernel_alone(styles_run):
    """needs_package.py imports einops, which the workflow's environment lacks: its entry's requirements are
    installed under .snakemake/ (not into any environment), its jobs trace (their rows are TileLang's own report:
    test above), and the message of a kernel without them says how to give them."""
    workdir, proc = styles_run
    assert importlib.util.find_spec("einops") is None  # not in the environment the tests and the workflow run in
    (marker,) = (workdir / kernel_requirements.CACHE_DIR).glob("*/" + kernel_requirements.MARKER)
    assert json.loads(marker.read_text())["requirements"] == ["einops"] and (marker.parent / "einops").is_dir()
    assert "installing einops for" in proc.stderr
    message = kernels.import_problem(ModuleNotFoundError("No module named 'einops'", name="einops"), DATA, "x")
    assert "give its config entry requirements: [einops]" in message


def test_a_requirement_that_does_not_parse_is_refused_naming_its_key():
    cfg = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"], "kernels": [
        {"name": "t", "file": str(DATA / "needs_package.py"), "function": "transpose", "params": [{}],
         "requirements": ["einops", "einops=="]}]}  # fmt: skip
    with pytest.raises(ConfigError, match=r"config kernels\[0\].requirements\[1\]: 'einops==' is not a requirement"):
        job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")


@pytest.mark.slow
def test_a_kernel_sized_from_the_gpu_is_traced_as_if_on_its_profile_named_in_rows_and_folders(styles_run):
    workdir, _ = styles_run
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    for kernel, device, sms, other in (("persistent", "H100", 132, 148), ("persistent_b200", "B200", 148, 132)):
        rows = churn[churn["kernel"] == kernel]
        assert set(rows["device"]) == {device} and set(rows["kernel_label"]) == {f"{kernel} on {device}"}
        assert not (rows["status"] == passes_table.STATUS_FAILED).any()
        out = run_dirs(workdir, "trace-env")[f"{kernel}+on-{device}"]
        record = Path(json.loads((out / "run.json").read_text())["run_record"])
        dumped = [path.read_text() for path in record.rglob("*_before.tir")]  # TileLang's own dumps of the IR
        assert any(f'thread_binding({sms}, thread="blockIdx.x")' in text for text in dumped), kernel
        assert not any(f"thread_binding({other}," in text for text in dumped), kernel
    assert set(churn.loc[~churn["kernel"].str.startswith("persistent"), "device"]) == {passes_table.NO_DEVICE}


@pytest.mark.slow
def test_a_module_the_kernel_imports_is_part_of_it(styles_run, monkeypatch):
    """styles.py imports styles_tiles inside dynamic_copy: editing it (an older mtime kept) retraces the batches of
    styles.py's kernels and no other, and it is in their inputs and their trace cache key (kernel_files)."""
    workdir, _ = styles_run
    configs = ("--configfile", "config/test_config.yaml", "config/styles.yaml")
    cfg = yaml.safe_load((REPO / "config" / "test_config.yaml").read_text())
    cfg.update(yaml.safe_load((workdir / "config" / "styles.yaml").read_text()))
    monkeypatch.chdir(workdir)  # the files' relative paths, as the workflow reads them
    grid = job_grid.build_grid(config_checks.validate_config(cfg))
    helper = f"{USER_DIR}/styles_tiles.py"
    mine = {batch.name for batch in grid.batches if helper in batch.kernel_files}
    assert mine and all(f"{USER_DIR}/styles.py" in batch.kernel_files for batch in grid.batches if batch.name in mine)
    assert any(f"{USER_DIR}/gpu_at_import.py" in batch.kernel_files for batch in grid.batches if batch.name not in mine)
    file = workdir / helper
    original, stat = file.read_text(), file.stat()
    try:
        file.write_text(original.replace("COPY_BLOCK = 128", "COPY_BLOCK = 64"))
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))
        proc = snakemake(workdir, "-n", "--quiet", "rules", *configs)
        assert set(trace_batch_counts(proc.stdout)) == mine, proc.stdout
    finally:
        file.write_text(original)
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.integration
def test_what_the_source_says_is_what_tilelangs_objects_say():
    """Parameters, runtime arguments, pass_configs and out_idx read from the source (no import) against the
    imported objects: JITFunc.tensor_args, the decorator's settings, the PrimFunc's own."""
    require_tilelang()
    file = DATA / "styles.py"
    assert kernels.kernel_functions(file) == ["lazy_scale", "eager_matmul", "tuned_add", "dynamic_copy", "fixed_negate"]
    given = {"lazy_scale": {"M": 64, "N": 64}, "eager_matmul": MATMUL, "tuned_add": {"M": 64, "N": 64},
             "dynamic_copy": {"N": 128}, "fixed_negate": {}}  # fmt: skip
    for function, params in given.items():
        signature = kernels.read_signature(file, function)
        func, built = kernels.build(file, function, params, with_object=True)
        impl = kernels.jit_impl(built)
        if impl is None:
            assert signature.style == "prim_func" and signature.params == {} and func is built
            continue
        assert set(signature.tensor_params) == set(getattr(impl.func, "tensor_args", None) or {}), function
        assert signature.kernel_pass_configs == kernels.own_pass_configs(built, func), function
        assert signature.out_idx == impl.out_idx, function
        assert signature.problem(params) is None, function
    assert kernels.read_signature(file, "tuned_add").style == "autotune"


@pytest.mark.integration
def test_a_dtype_object_and_a_tuple_reach_the_kernel_as_tilelang_objects():
    require_tilelang()
    func = kernels.build(DATA / "styles.py", "lazy_scale", {"M": 64, "N": 64, "block": [32, 32], "dtype": "T.float32"})
    assert {str(buffer.dtype) for buffer in func.buffer_map.values()} == {"float32"}
    signature = kernels.read_signature(DATA / "styles.py", "lazy_scale")
    assert signature.defaults()["dtype"] == "T.float16"  # the source's T.float16, spelled as the config writes it
    params = {"M": 64, "block": [32, 32], "dtype": "T.float32"}
    assert kernels.label("k", params, signature.defaults()) == "k(M=64, block=[32, 32], dtype=T.float32)"
    assert kernels.folder_id("k", params, signature.defaults()) == "k_M64_block3232_dtypeT.float32"
    with pytest.raises(kernels.KernelError, match="names no object of tilelang.language in this TileLang"):
        kernels.build(DATA / "styles.py", "lazy_scale", {"M": 64, "N": 64, "dtype": "T.float99"})


@pytest.mark.integration
def test_a_computed_setting_is_read_by_importing_the_file(tmp_path, monkeypatch):
    """pass_configs=a call and @autotune(configs=a call): the source cannot say, the probe imports the file."""
    require_tilelang()
    monkeypatch.chdir(tmp_path)
    source = (DATA / "styles.py").read_text()
    computed = source.replace(
        "@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})",
        "def settings():\n    return {tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True}\n\n\n"
        "@tilelang.jit(pass_configs=settings())",
    )
    file = tmp_path / "computed.py"
    file.write_text(computed)
    signature = kernels.read_signature(file, "eager_matmul")
    assert signature.kernel_pass_configs == kernel_source.UNREAD
    found = kernel_probe.probe(file, "eager_matmul", {})
    func, built = kernels.build(file, "eager_matmul", MATMUL, with_object=True)
    assert found["pass_configs"] == kernels.own_pass_configs(built, func) == {"tl.disable_tma_lower": True}
    cfg = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"],
           "kernels": [{"name": "c", "file": str(file), "function": "eager_matmul", "params": [MATMUL]}]}  # fmt: skip
    grid = job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")
    ((key, spec),) = grid.lowerings.items()
    assert spec.pass_configs == {"tl.disable_tma_lower": True} and key[2].endswith("+disable_tma_lower")


@pytest.mark.integration
def test_the_gpu_stage_makes_inputs_from_the_primfunc_and_calls_the_files_reference_on_the_cpu():
    """The GPU stage without hooks (gpu_bench.kernel_io), on torch CPU tensors: inputs of the PrimFunc's own
    shapes and types, outputs from out_idx or T.empty, the config's reference called for real."""
    require_tilelang()
    import torch
    from tilelang_churn.gpu import gpu_bench

    def spec(function, params, reference=None):
        file = str(DATA / "styles.py")
        return JobSpec(kernel=function, source=file, kernel_file=file, params=params, kernel_label=function,
                       target_name="cuda-sm90", target={"kind": "cuda", "arch": "sm_90"}, mode=None,
                       function=function, user_file=True, reference=reference)  # fmt: skip

    io = gpu_bench.kernel_io(spec("lazy_scale", {"M": 64, "N": 32}, reference="ref_scale"))
    assert io.out_idx == io.compile_out_idx == [-1]  # the decorator's out_idx
    (a,) = io.inputs("cpu")
    buffer = io.func.buffer_map[io.func.params[0]]
    assert list(a.shape) == [int(x) for x in buffer.shape] and str(a.dtype) == f"torch.{buffer.dtype}"
    assert torch.equal(io.reference([a]), a * 2)
    eager = gpu_bench.kernel_io(spec("eager_matmul", MATMUL))
    assert eager.out_idx == [-1] and eager.compile_out_idx is None  # T.empty: TileLang's compile reads it itself
    assert [list(t.shape) for t in eager.inputs("cpu")] == [[128, 128], [128, 128]] and eager.reference is None
    dynamic = gpu_bench.kernel_io(spec("dynamic_copy", {"N": 64}))
    assert [list(t.shape) for t in dynamic.inputs("cpu")] == [[gpu_bench.DYNAMIC_EXTENT, 64]]
    with pytest.raises(kernels.KernelError, match="no function 'ref_nothing'"):
        gpu_bench.kernel_io(spec("lazy_scale", {"M": 64, "N": 32}, reference="ref_nothing"))


def test_every_way_of_importing_a_module_beside_the_kernel_makes_it_part_of_it(tmp_path):
    """import, from-import of a module or of a package's submodule, a relative import inside that package, an
    import inside a function, importlib.import_module and __import__ with a literal name, and a module's own
    imports in turn; installed packages and files nobody imports are not part of the kernel."""
    files = {
        "kernel.py": "import helper\nimport tilelang\nfrom pkg import sub\nimport importlib\n\n\ndef build():\n"
        "    importlib.import_module('late')\n    __import__('later')\n    from pkg.deep import x\n",
        "helper.py": "import other\n",
        "other.py": "",
        "pkg/__init__.py": "from . import rel\n",
        "pkg/sub.py": "",
        "pkg/rel.py": "",
        "pkg/deep.py": "x = 1\n",
        "late.py": "",
        "later.py": "",
        "unused.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    found = kernels.local_modules(tmp_path / "kernel.py")
    expected = {str(tmp_path / name) for name in files if name not in ("kernel.py", "unused.py")}
    assert set(found) == expected and len(found) == len(expected)


def test_a_job_whose_python_has_no_install_of_the_requirements_says_so(tmp_path, monkeypatch):
    """The folder is per Python version: a job in an environment of another Python than the workflow's (which the
    config check installed for) finds none, and says so naming the version."""
    monkeypatch.chdir(tmp_path)
    here = ".".join(map(str, __import__("sys").version_info[:2]))
    assert kernel_requirements.folder_for(["einops"]) == kernel_requirements.folder_for(["einops"], here)
    assert kernel_requirements.folder_for(["einops"], "3.12") != kernel_requirements.folder_for(["einops"], "3.11")
    with pytest.raises(kernel_requirements.RequirementsError, match=rf"einops are not installed for Python {here}"):
        kernel_requirements.import_path(["einops"])
