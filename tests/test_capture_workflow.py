"""A program's kernels, captured by scripts/capture_kernels.py, traced by the workflow (a real Snakemake run: the
slow tier) and counted by TileLang alone.

tests/data/capture/model.py is a small model whose quantisation and FP8 GEMM wrappers size their kernels from
the tensors they are given (``N = x.size(-1)``); on this CPU machine it runs to its end on CPU tensors. Every
kernel its layers need is captured, and each one's instrument rows have the pass runs and changed runs that
benchmarks/tilelang_examples/independent_count.py counts with TileLang alone (a plain TVM pass instrument around
``tilelang.lower``, none of this project's code).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from conftest import REPO, make_workdir, require_tilelang, snakemake
from tilelang_churn.kernel import kernels

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

CAPTURE = REPO / "scripts" / "capture_kernels.py"
MODEL = REPO / "tests" / "data" / "capture" / "model.py"
INDEPENDENT = REPO / "benchmarks" / "tilelang_examples" / "independent_count.py"


def test_a_models_kernels_are_captured_whole_and_trace_as_tilelang_alone_counts_them(tmp_path):
    require_tilelang()
    out = tmp_path / "kernels.yaml"
    proc = subprocess.run(
        [sys.executable, str(CAPTURE), "--out", str(out), "--", sys.executable, str(MODEL)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0 and "model: 2 layers" in proc.stdout, proc.stderr[-3000:]
    sizes = kernels.load_module(MODEL).SIZES  # the model's own: its layers' widths make its kernels
    dim, inter, tokens = sizes["dim"], sizes["inter"], sizes["tokens"]
    entries = yaml.safe_load(out.read_text())["kernels"]
    assert sorted((e["function"], sorted(e["params"][0].items())) for e in entries) == sorted([
        ("act_quant_kernel", [("N", dim)]), ("act_quant_kernel", [("N", inter)]),
        ("fp8_gemm_kernel", [("K", dim), ("N", inter)]), ("fp8_gemm_kernel", [("K", inter), ("N", dim)]),
    ])  # fmt: skip
    quant = next(e for e in entries if e["params"][0] == {"N": dim})
    assert quant["captured"]["inputs"]["X"] == {"shape": [2 * tokens, dim], "dtype": "bfloat16"}  # its first call

    workdir = make_workdir(tmp_path / "wf")
    grid = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"], "job_figures": False,
            "heatmap_formats": ["png"]}  # fmt: skip
    (workdir / "config" / "small.yaml").write_text(yaml.safe_dump(grid))
    run = snakemake(workdir, "--cores", "2", "--configfile", "config/test_config.yaml", "config/small.yaml", str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    counted = tmp_path / "count.json"
    count = subprocess.run([sys.executable, str(INDEPENDENT), "count", str(out), str(counted)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert count.returncode == 0, count.stderr[-3000:]
    compare = subprocess.run([sys.executable, str(INDEPENDENT), "compare", str(counted), "results/churn.csv"],
                             cwd=workdir, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert "TileLang alone lowers 4 of 4 configurations; the workflow's rows equal its count for 4, differ for 0" in (
        compare.stdout
    ), compare.stdout + compare.stderr[-3000:]
    assert compare.returncode == 0
