"""TileLang 0.1.6 and 0.1.7 as versions (config/tilelang_releases.yaml ``cuda_stub: true``): their libraries link
the CUDA driver, so their environments get the CUDA 12 runtime and NVRTC wheels and a stub libcuda.so.1
(releases/cuda_stub.py). tests/data/kernel_styles/fast_math_off.py is written as model code pinned to 0.1.6 is: a
pass config key later releases dropped. Traced under 0.1.6.post2, its rows are what a plain TVM pass instrument
counts in that environment (benchmarks/tilelang_examples/independent_count.py: TileLang alone); under 0.1.15 it
is one failed row naming the key."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import system_packages
import yaml
from conftest import REPO, make_workdir, require_tilelang, snakemake
from tilelang_churn.core import passes_table
from tilelang_churn.releases import cuda_stub, release_process
from tilelang_churn.tables import frames

INDEPENDENT = REPO / "benchmarks" / "tilelang_examples" / "independent_count.py"
KERNEL = REPO / "tests" / "data" / "kernel_styles" / "fast_math_off.py"


def test_the_stub_defines_each_driver_function_nm_lists_once():
    listed = "                 U cuLaunchKernel\n                 U cuModuleLoadData@libcuda.so.1\n"
    listed += (
        "                 U cuLaunchKernel\n                 U cudaMalloc@libcudart.so.12\n      U memcpy@GLIBC_2.14\n"
    )
    assert cuda_stub.driver_symbols(listed) == ["cuLaunchKernel", "cuModuleLoadData"]
    source = cuda_stub.stub_source(["cuLaunchKernel"])
    assert f"int cuLaunchKernel(void) {{ return {cuda_stub.CUDA_ERROR_NOT_SUPPORTED}; }}" in source


@pytest.mark.slow
def test_a_kernel_written_for_0_1_6_traces_there_as_tilelang_alone_counts_and_names_the_lost_key_under_0_1_15(
    tmp_path,
):
    require_tilelang()
    for package in ("binutils", "gcc"):  # the CUDA driver stub is built with nm and gcc
        system_packages.require(package)
    workdir = make_workdir(tmp_path / "wf")
    shutil.copy(KERNEL, workdir / "kernel.py")
    entry = {"name": "scale", "file": "kernel.py", "function": "scale_kernel", "params": [{"N": 512}]}
    grid = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"], "job_figures": False,
            "heatmap_formats": ["png"], "versions": ["0.1.6.post2", "0.1.15"], "kernels": [entry],
            "release_env_dir": str(tmp_path / "envs")}  # fmt: skip
    (workdir / "config" / "old.yaml").write_text(yaml.safe_dump(grid))
    proc = snakemake(workdir, "--cores", "2", "--configfile", "config/test_config.yaml", "config/old.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    old, new = (churn[churn["tilelang_version"] == version] for version in ("0.1.6.post2", "0.1.15"))
    assert not (old["status"] == passes_table.STATUS_FAILED).any() and (old["status"] == "changed").sum() > 5
    assert set(old["pass_configs"]) == {
        '{"tl.disable_fast_math":true,"tl.disable_tma_lower":true,"tl.disable_warp_specialized":true}'
    }  # the kernel's own, as 0.1.6's PassConfigKey spells them
    (failed,) = new.to_dict("records")
    assert failed["status"] == passes_table.STATUS_FAILED and "AttributeError: TL_DISABLE_FAST_MATH" in failed["error"]
    # the comparison's "In short": the two are configurations of one version each (their pass configs differ)
    index = (workdir / "results" / "compare" / "index.html").read_text()
    short = index[index.index("In short") :]
    assert "only 0.1.15 has this configuration, and its job failed: KernelError: " in short
    assert "AttributeError: TL_DISABLE_FAST_MATH" in short and "only 0.1.6.post2 has this configuration: " in short
    env = tmp_path / "envs" / "tilelang-0.1.6.post2"
    marker = json.loads((env / "environment.json").read_text())
    assert marker["cuda_stub"] and marker["tilelang_version"] == "0.1.6.post2"
    # TileLang alone, in that environment (without the variables the installed TileLang exported here): a plain TVM
    # pass instrument around tilelang.lower
    config, counted = tmp_path / "count.json", tmp_path / "counted.json"
    config.write_text(json.dumps({"kernels": [{**entry, "file": str(workdir / "kernel.py")}]}))
    command = [str(env / "bin" / "python"), str(INDEPENDENT), "count", str(config), str(counted)]
    count = subprocess.run(command, capture_output=True, text=True, timeout=600, env=release_process.release_environ())
    assert count.returncode == 0, count.stderr[-3000:]
    churn_csv = str(tmp_path / "churn_0.1.6.post2.csv")  # the 0.1.6.post2 job's rows alone
    rows = pd.read_csv(workdir / "results" / "churn.csv", dtype=str, keep_default_na=False)
    rows[rows["tilelang_version"] == "0.1.6.post2"].to_csv(churn_csv, index=False)
    compare = subprocess.run([sys.executable, str(INDEPENDENT), "compare", str(counted), churn_csv],
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert "the workflow's rows equal its count for 1, differ for 0" in compare.stdout, compare.stdout + compare.stderr
