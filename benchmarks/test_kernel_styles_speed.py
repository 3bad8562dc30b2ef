"""Issue 19's costs of kernels as TileLang users write them (run with `make bench`):

- the config check of 40 user kernels in TileLang's styles (@tilelang.jit lazy and eager, @autotune over it with
  `params: autotune`, a module-level @T.prim_func; tests/data/kernel_styles/) reads them from their source: the
  dry run stays within 2 s of the default grid's own; the first one within 6 s, importing the two files whose
  settings are computed (kernel_probe: one import per file), the runs after it reading them from its cache;
- a jit kernel lowers at the cost of the same kernel as a plain builder (get_tir against a call), within 1.25x.

Numbers go to results/bench/scale.csv (goal styles), as benchmarks/test_scale.py's do.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
import yaml
from test_scale import record, timed_snakemake

REPO = Path(__file__).resolve().parents[1]
STYLES = REPO / "tests" / "data" / "kernel_styles" / "styles.py"
MATMUL = {"M": 256, "N": 256, "K": 256, "block_M": 64, "block_N": 64, "block_K": 32}
COPIES = 8  # of the file's five kernels: 40 kernels


def styles_config(folder: Path) -> dict:
    computed = (folder / "computed.py").name  # one file whose pass_configs are a call: the probe imports it
    entries = []
    for copy in range(COPIES):
        entries += [
            {"name": f"s{copy}", "file": "kernels/styles.py", "function": ["lazy_scale", "eager_matmul",
             "fixed_negate"], "params": {"lazy_scale": [{"M": 128 * (copy + 1), "N": 128}], "eager_matmul": [MATMUL]}},
            {"name": f"t{copy}", "file": "kernels/styles.py", "function": "tuned_add",
             "defaults": {"M": 128 * (copy + 1), "N": 128}, "params": "autotune"},
            {"name": f"d{copy}", "file": "kernels/styles.py", "function": "dynamic_copy", "params": [{"N": 256}]},
        ]  # fmt: skip
    entries.append({"name": "computed", "file": f"kernels/{computed}", "function": "eager_matmul", "params": [MATMUL]})
    return {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"], "kernels": entries}


@pytest.fixture(scope="module")
def styles_workdir(tmp_path_factory) -> Path:
    pytest.importorskip("tilelang")
    workdir = tmp_path_factory.mktemp("styles")
    shutil.copytree(REPO / "config", workdir / "config")
    shutil.copytree(STYLES.parent, workdir / "kernels")  # styles.py and the module it imports
    computed = STYLES.read_text().replace(
        "@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})",
        "def settings():\n    return {tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}\n\n\n"
        "@tilelang.jit(pass_configs=settings())",
    )
    (workdir / "kernels" / "computed.py").write_text(computed)
    (workdir / "config" / "styles.yaml").write_text(yaml.safe_dump(styles_config(workdir / "kernels")))
    return workdir


def test_the_config_check_of_40_user_kernels_reads_their_source(styles_workdir):
    default = timed_snakemake(styles_workdir, "-n", "--quiet", "rules").wall_seconds  # config/config.yaml alone
    args = ("-n", "--quiet", "rules", "--configfile", "config/config.yaml", "config/styles.yaml")
    first = timed_snakemake(styles_workdir, *args).wall_seconds
    again = timed_snakemake(styles_workdir, *args).wall_seconds
    record("styles", "dry run of the default grid (reference)", default, "s")
    record(
        "styles",
        "dry run + 40 user kernels in TileLang's styles, first (two files probed)",
        first,
        "s",
        round(default + 6, 1),
    )
    record(
        "styles",
        "dry run + 40 user kernels in TileLang's styles, again (probe cached)",
        again,
        "s",
        round(default + 2, 1),
    )


def test_a_jit_kernel_lowers_at_the_cost_of_the_same_builder(styles_workdir):
    """The styles file's lazy_scale as written (@tilelang.jit, get_tir) and as a plain builder (its decorator line
    removed), 4 parameter sets each in one run: their jobs' lowering CPU seconds (build included)."""
    builder = STYLES.read_text().replace("@tilelang.jit(out_idx=[-1])\ndef lazy_scale", "def lazy_scale")
    (styles_workdir / "kernels" / "builder.py").write_text(builder)
    sets = [{"M": 128 * (i + 1), "N": 256} for i in range(4)]
    config = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"], "kernels": [
        {"name": "jit", "file": "kernels/styles.py", "function": "lazy_scale", "params": sets},
        {"name": "builder", "file": "kernels/builder.py", "function": "lazy_scale", "params": sets},
    ]}  # fmt: skip
    (styles_workdir / "config" / "same.yaml").write_text(yaml.safe_dump(config))
    timed_snakemake(styles_workdir, "--cores", "2", "--configfile", "config/same.yaml")
    seconds: dict[str, list[float]] = {"jit": [], "builder": []}
    for run in (styles_workdir / "results" / "runs").glob("*/cuda-sm90/*/instrument/run.json"):
        info = json.loads(run.read_text())
        seconds[info["spec"]["kernel"]].append(info["lower_cpu_seconds"])
    assert len(seconds["jit"]) == len(seconds["builder"]) == len(sets)
    jit, plain = statistics.median(seconds["jit"]), statistics.median(seconds["builder"])
    record("styles", "lowering CPU per job, lazy_scale as a plain builder", plain, "s")
    record(
        "styles", "lowering CPU per job, the same kernel as @tilelang.jit (get_tir)", jit, "s", round(plain * 1.25, 3)
    )
