"""Any TileLang kernel, not only the GEMM: the kernel contract (kernel/kernels.py), the shipped kernels, a user's
kernel from a folder outside the repository, and every bad kernel named before any job.

The workflow run here (`kernels_run`) traces the shipped FlashAttention and RMSNorm on small parameters and a
user's kernel from a temporary folder, in every mode, for real; its rows are compared with TileLang's own
report (trace-env) and tools (trace-api: lower_trace).
"""

from __future__ import annotations

import ast
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, make_workdir, require_tilelang, rule_counts, run_script, snakemake, trace_batch_counts
from test_trace_env import report_passes, report_view
from tilelang_churn.core import passes_table
from tilelang_churn.core.jobs import JOB_KEY
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.grid.config_checks import ConfigError
from tilelang_churn.kernel import kernels
from tilelang_churn.tables import frames

# A user's kernel: C = A * scale, row by row (a file outside the repository).
USER_KERNEL = """
import tilelang.language as T


def build(M, N, block_N=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(M, T.ceildiv(N, block_N), threads=128) as (bx, by):
            for j in T.Parallel(block_N):
                C[bx, by * block_N + j] = A[bx, by * block_N + j] * T.cast(2, dtype)

    return main
"""
SMALL = {
    # one FlashAttention (its lowerings cost 2-3 s of CPU each), with a boolean parameter
    "flash_attention": [{"seq_q": 128, "seq_kv": 128, "is_causal": True}],
    "rmsnorm": [{"M": 256, "N": 256}],
}
MODES = ["trace-env", "trace-api", "pass-diff", "instrument"]


# the user's kernel as docs/own-kernel.md writes it: a path relative to the working directory (a folder beside it)
USER_FILE = "../my kernels/scale.py"


def kernel_config(user_file: str) -> dict:
    entries = [{"name": name, "shipped": name, "params": params} for name, params in SMALL.items()]
    entries.append({"name": "scale", "file": user_file, "params": [{"M": 256, "N": 512}]})
    # the per-job figures of kernels other than the GEMM: test_plot_churn.py draws them from rows
    return {"shapes": [], "targets": ["cuda-sm90"], "modes": MODES, "kernels": entries, "job_figures": False,
            "heatmap_formats": ["png"]}  # fmt: skip


@pytest.fixture(scope="session")
def kernels_run(tmp_path_factory):
    require_tilelang()
    root = tmp_path_factory.mktemp("kernels")
    user_file = root / "my kernels" / "scale.py"  # outside the repository and the working directory
    user_file.parent.mkdir()
    user_file.write_text(USER_KERNEL)
    workdir = make_workdir(root / "wf")
    assert (workdir / USER_FILE).resolve() == user_file.resolve()
    (workdir / "config" / "kernels.yaml").write_text(yaml.safe_dump(kernel_config(USER_FILE)))
    proc = snakemake(workdir, "--cores", "2", "--configfile", "config/test_config.yaml", "config/kernels.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return workdir, user_file


def job_rows(workdir: Path, target: str, folder: str, mode: str) -> list[dict]:
    (path,) = (workdir / "results" / "runs").glob(f"*/{target}/{folder}/{mode}/passes.csv")
    return passes_table.read_rows(path)


@pytest.mark.slow
def test_every_kernel_runs_in_every_mode_with_its_own_columns(kernels_run):
    workdir, user_file = kernels_run
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    jobs = churn.groupby(["kernel", "params", "target_name", "mode"]).ngroups
    assert jobs == (1 + 1 + 1) * len(MODES)
    assert set(churn["kernel"]) == {"flash_attention", "rmsnorm", "scale"}
    assert churn[["M", "block_M", "threads"]].isna().all().all() and (churn["dtype"] == "").all()  # the GEMM's
    causal = churn[churn["params"] == kernels.canonical({"seq_q": 128, "seq_kv": 128, "is_causal": True})]
    assert set(causal["kernel_label"]) == {"flash_attention(seq_q=128, seq_kv=128, is_causal=True)"}
    # a pandas user selects rows by one kernel parameter in one line (docs/own-kernel.md)
    selected = churn[churn["params"].map(json.loads).str.get("is_causal") == True]  # noqa: E712
    assert selected.equals(causal)
    summary = pd.read_csv(workdir / "results" / "churn_summary.csv")
    # the kernel's columns, then the columns added after them (version_name, device), the summary's last
    later = len(passes_table.LATER_PROVENANCE)
    kernel_columns = list(summary.columns[-len(passes_table.KERNEL_COLUMNS) - later : -later])
    assert len(summary) == jobs and kernel_columns == list(passes_table.KERNEL_COLUMNS)
    assert list(summary.columns[-later:]) == list(passes_table.LATER_PROVENANCE)
    assert set(summary["version_name"]) == set(summary["tilelang_version"]) and set(summary["device"]) == {"none"}
    for status in ("failed", "unsupported"):
        assert not (churn["status"] == status).any(), churn[churn["status"] == status][["kernel", "error"]]
    # the relative path was resolved against the Snakemake working directory, as docs/own-kernel.md says
    (run,) = (workdir / "results" / "runs").glob("*/cuda-sm90/scale_M256_N512/instrument/run.json")
    assert json.loads(run.read_text())["spec"]["kernel_file"] == str(user_file.resolve())
    # each batch runs under config job_timeout_s (its default): the first line of a batch log is its command
    batch_logs = list((workdir / "logs" / "trace").glob("*/trace_*.log"))
    assert len(batch_logs) == 4
    for batch_log in batch_logs:
        assert "--job-timeout 600" in batch_log.read_text().splitlines()[0], batch_log


@pytest.mark.slow
@pytest.mark.parametrize(
    "folder", ["flash_attention_seq_q128_seq_kv128_is_causalTrue", "rmsnorm_M256_N256", "scale_M256_N512"]
)
def test_trace_env_rows_equal_tilelangs_own_report(kernels_run, folder):
    workdir, _ = kernels_run
    (out,) = (workdir / "results" / "runs").glob(f"*/cuda-sm90/{folder}/trace-env")
    rows = passes_table.read_rows(out / "passes.csv")
    run_dir = Path(json.loads((out / "run.json").read_text())["run_record"])
    shown = report_passes(run_dir / "report.html")
    assert [report_view(r) for r in rows] == [
        {k: p.get(k) for k in ("idx", "label", "phase", "status", "add", "del")} for p in shown
    ]
    assert sum(1 for r in rows if r["status"] == "changed") > 5


@pytest.mark.slow
def test_trace_api_rows_equal_what_lower_trace_returns(kernels_run):
    """The shipped RMSNorm, built by its own file, through TileLang's lower_trace with the default pass list."""
    workdir, _ = kernels_run
    code = (
        "import sys, json, contextlib, io; sys.path.insert(0, sys.argv[1])\n"
        "from tilelang_churn.kernel import kernels\nfrom tilelang_churn.trace import tilelang_trace, trace_cli\n"
        "spec = trace_cli.parse_args(['--mode', 'trace-api', '--kernel', 'rmsnorm', '--params', sys.argv[2]]).spec\n"
        "from tilelang import tvm\n"
        "from tilelang.tools.lower_trace import lower_trace\n"
        "target = tvm.target.Target(spec.target)\n"
        "func = kernels.build(spec.kernel_file, spec.function, spec.params)\n"
        "with target, contextlib.redirect_stdout(io.StringIO()):\n"
        "    results = lower_trace(func, tilelang_trace.resolve_passes(spec, target))\n"
        "print(json.dumps([[r['name'], bool(r['changed']), r['insertions'], r['deletions']] for r in results]))\n"
    )
    params = kernels.canonical(SMALL["rmsnorm"][0])
    proc = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "scripts"), params], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = job_rows(workdir, "cuda-sm90", "rmsnorm_M256_N256", "trace-api")
    assert [[r["pass"], r["changed"], r["added"], r["deleted"]] for r in rows] == expected
    assert any(changed for _, changed, _, _ in expected)


@pytest.mark.slow
def test_the_heatmap_names_each_kernel(kernels_run):
    workdir, _ = kernels_run
    assert not list((workdir / "results" / "figures" / "churn").rglob("*.png")), "job_figures: false draws none"
    assert (workdir / "results" / "figures" / "churn_heatmap.png").stat().st_size > 10_000
    from tilelang_churn.figures import plot_churn  # the heatmap's column labels (its SVG draws text as outlines)

    jobs = frames.read_frame(workdir / "results" / "churn.csv").drop_duplicates(JOB_KEY)
    # the target on the first line, the kernel's label (wrapped past plot_churn.LABEL_LINE_CHARS) on the others
    labels = {(label.split("\n")[0], " ".join(label.split("\n")[1:])) for label in plot_churn._config_labels(jobs)}
    for label in (
        "flash_attention(seq_q=128, seq_kv=128, is_causal=True)",
        "rmsnorm(M=256, N=256)",
        "scale(M=256, N=512)",
    ):
        assert ("cuda-sm90", label) in labels, (label, labels)


@pytest.mark.slow
def test_editing_a_users_kernel_retraces_exactly_its_jobs(kernels_run, monkeypatch):
    workdir, user_file = kernels_run
    configs = ("--configfile", "config/test_config.yaml", "config/kernels.yaml")
    proc = snakemake(workdir, "-n", *configs)
    assert "Nothing to be done" in proc.stdout + proc.stderr
    cfg = yaml.safe_load((REPO / "config" / "test_config.yaml").read_text())
    cfg.update(yaml.safe_load((workdir / "config" / "kernels.yaml").read_text()))
    monkeypatch.chdir(workdir)  # the file's relative path, as the workflow reads it
    grid = job_grid.build_grid(config_checks.validate_config(cfg))
    mine = {batch.name for batch in grid.batches if batch.kernel_files == [USER_FILE]}
    assert len(mine) == 2  # trace-env apart: the user's file has batches of its own
    assert all(batch.kernel_files == [] for batch in grid.batches if batch.name not in mine)
    original, stat = user_file.read_text(), user_file.stat()
    try:
        # an edit that keeps the older mtime (cp -p, rsync -t, tar x): the file's sha256 is a param of its batches
        user_file.write_text(original + "\n# edited\n")
        os.utime(user_file, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))
        proc = snakemake(workdir, "-n", "--quiet", "rules", *configs)
        assert set(trace_batch_counts(proc.stdout)) == mine, proc.stdout
        assert rule_counts(proc.stdout).get("churn_table") == 1
        user_file.write_text(original + "\n# edited again\n")  # an ordinary edit: a newer mtime
        proc = snakemake(workdir, "-n", "--quiet", "rules", *configs)
        assert set(trace_batch_counts(proc.stdout)) == mine, proc.stdout
    finally:
        user_file.write_text(original)
        os.utime(user_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


# ------------------------------------------------------------------------------------------- bad kernels


def refused(tmp_path, entry: dict) -> str:
    cfg = {"shapes": [{"M": 64, "N": 64, "K": 64}], "targets": ["cuda-sm90"], "modes": ["instrument"]}
    cfg["kernels"] = [entry]
    with pytest.raises(ConfigError) as caught:
        job_grid.build_grid(config_checks.validate_config(copy.deepcopy(cfg)), installed="0.1.15")
    return str(caught.value)


def test_each_bad_kernel_is_named_before_any_job(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def build(N):\n    return (\n")
    plain = tmp_path / "plain.py"
    plain.write_text("def make(N, block=64):\n    pass\n")
    missing = tmp_path / "nowhere.py"
    stray = tmp_path / "stray.py"  # Latin-1 without its coding line
    stray.write_bytes("def build(N):\n    return 'caf\u00e9'\n".encode("latin-1"))
    decorated = tmp_path / "decorated.py"
    decorated.write_text(
        "import tilelang\nimport tilelang.language as T\nfrom tilelang.autotuner import autotune\n\n"
        "@T.prim_func\ndef build(A: T.Tensor((8,), 'float16')):\n    pass\n\n"
        "@autotune(configs=[{'N': 8}])\ndef tuned(N=8):\n    pass\n\n"
        "@tilelang.jit\ndef eager(A, block):\n    M = T.const('M')\n    A: T.Tensor((M,), 'float16')\n"
    )
    cases = [
        (
            {"name": "k", "file": str(stray), "params": [{}]},
            f"config kernels[0]: kernel 'k': {stray}, line 2: cannot be read as utf-8 (byte 0xe9)",
        ),
        (
            {"name": "k", "file": str(decorated), "params": [{"N": 8}]},
            f"config kernels[0].params[0]: kernel 'k': build() in {decorated} takes no parameter 'N'; its parameters "
            "are (none)",
        ),
        (
            {"name": "k", "file": str(decorated), "function": "tuned", "params": [{}]},
            f"config kernels[0]: kernel 'k': {decorated}: tuned() (line 10) is decorated with @autotune but not with "
            "@tilelang.jit",
        ),
        (
            {"name": "k", "file": str(decorated), "function": "eager", "params": [{"M": 8, "block": 4, "A": 1}]},
            f"config kernels[0].params[0]: kernel 'k': eager() in {decorated} takes 'A' as a tensor at run time, not "
            "as a parameter of the config; its parameters are M, block",
        ),
        (
            {"name": "k", "file": str(decorated), "function": "eager", "params": [{"block": 4}]},
            f"config kernels[0].params[0]: kernel 'k': eager() in {decorated} needs M, which the params do not give",
        ),
        (
            {"name": "k", "file": str(decorated), "function": "all", "params": {"nope": [{}]}},
            "config kernels[0].params: 'nope' is not a function of this entry (build, tuned, eager)",
        ),
        (
            {
                "name": "k",
                "file": str(decorated),
                "function": ["build", "eager"],
                "defaults": {"blocks": 4},
                "params": {"eager": [{"M": 8, "block": 4}]},
            },
            f"config kernels[0].defaults: 'blocks' is a parameter of none of build, eager in {decorated}",
        ),
        (
            {"name": "k", "file": str(plain), "function": "make", "params": "autotune"},
            f"config kernels[0].params: kernel 'k': autotune, but make() in {plain} has no @autotune decorator",
        ),
        (
            {"name": "k", "file": str(missing), "params": [{}]},
            f"config kernels[0].file: kernel 'k': '{missing}' is not a file",
        ),
        (
            {"name": "k", "file": str(broken), "params": [{}]},
            f"config kernels[0]: kernel 'k': {broken}, line 2: does not parse",
        ),
        (
            {"name": "k", "file": str(plain), "params": [{}]},
            f"config kernels[0]: kernel 'k': {plain}: no function 'build'",
        ),
        (
            {"name": "k", "file": str(plain), "function": "make", "params": [{"N": 1, "blocks": 2}]},
            f"config kernels[0].params[0]: kernel 'k': make() in {plain} takes no parameter 'blocks'",
        ),
        (
            {"name": "k", "file": str(plain), "function": "make", "params": [{"block": 2}]},
            f"config kernels[0].params[0]: kernel 'k': make() in {plain} needs N",
        ),
        (
            {"name": "k", "shipped": "nope", "params": [{}]},
            "config kernels[0].shipped: kernel 'k': no shipped kernel 'nope'",
        ),
        (
            {"name": "my kernel", "shipped": "rmsnorm", "params": [{}]},
            "config kernels[0].name: 'my kernel' does not match",
        ),
        (
            {"name": "gemm", "shipped": "rmsnorm", "params": [{}]},
            "config kernels[0].name: 'gemm' is also the name of the GEMM",
        ),
        ({"name": "k", "shipped": "rmsnorm", "file": str(plain), "params": [{}]}, "config kernels[0]:"),
    ]
    for entry, message in cases:
        assert refused(tmp_path, entry).startswith(message), (entry, refused(tmp_path, entry))


def test_a_bad_declaration_in_a_kernel_file_is_named_with_its_line_before_any_job(tmp_path):
    body = "def build(M, N=8, block_M=4):\n    pass\n"
    cases = [
        ("COLUMNS = ('M', 'rows')\n", "line 1: COLUMNS names 'rows', which is not a table column of kernel parameters"),
        ("COLUMNS = ('M', 'K')\n", "line 1: COLUMNS names 'K', which build() does not take"),
        ("COLUMNS = 'M'\n", "line 1: COLUMNS must be a tuple of parameter names, not 'M'"),
        ("\nLOWERING_COST = 0\n", "line 2: LOWERING_COST must be a positive number, not 0"),
        ("LOWERING_COST = True\n", "line 1: LOWERING_COST must be a positive number, not True"),
        ("LOWERING_COST = float('inf')\n", "line 1: LOWERING_COST must be a positive number, not float('inf')"),
    ]
    for number, (declaration, said) in enumerate(cases):
        file = tmp_path / f"declares{number}.py"
        file.write_text(declaration + body)
        message = refused(tmp_path, {"name": "k", "file": str(file), "params": [{"M": 8}]})
        assert message.startswith(f"config kernels[0]: kernel 'k': {file}, {said}"), message
    good = tmp_path / "good.py"
    good.write_text("COLUMNS = ('M', 'N', 'block_M')\nLOWERING_COST = 2\n" + body)
    signature = kernels.read_signature(good)
    assert (signature.columns, signature.lowering_cost) == (("M", "N", "block_M"), 2.0)


def test_the_gemm_is_named_only_by_its_file_and_where_the_book_names_it():
    """The book's GEMM is an ordinary kernel: its file declares its columns and cost, and no module of the
    package spells its name but kernels.BOOK_KERNEL, which only the book's script's options (trace_cli), config
    shapes (job_grid: the book's configurations) and config kernels (kernel_configs: none takes its name) use."""
    package = REPO / "scripts" / "tilelang_churn"
    book_modules = {"kernel/kernels.py", "grid/job_grid.py", "grid/kernel_configs.py", "trace/trace_cli.py"}
    spelled, used = {}, {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() == "gemm":
                spelled.setdefault(name, []).append(node.lineno)
            if isinstance(node, ast.Name) and node.id in ("GEMM", "BOOK_KERNEL"):
                used.setdefault(name, []).append(node.lineno)
            if isinstance(node, ast.Attribute) and node.attr in ("GEMM", "BOOK_KERNEL"):
                used.setdefault(name, []).append(node.lineno)
    assert set(spelled) == {"kernel/kernels.py"} and len(spelled["kernel/kernels.py"]) == 1, spelled
    assert set(used) <= book_modules, {name: lines for name, lines in used.items() if name not in book_modules}
    gemm = kernels.read_signature(kernels.shipped(kernels.BOOK_KERNEL))
    assert gemm.columns == passes_table.PARAM_COLUMNS and gemm.lowering_cost == 1.0
    others = [kernels.read_signature(kernels.shipped(name)) for name in kernels.shipped_names() if name != "gemm"]
    assert others and all(not other.columns and other.lowering_cost != 1.0 for other in others)


@pytest.mark.slow  # one TileLang import, three lowerings
def test_the_gemm_traced_as_an_ordinary_kernel_writes_the_books_rows(tmp_path):
    """The book's options, the shipped GEMM named as any kernel is, and a user's copy of its file: one generic
    path. The first two are one job spec and write the same rows; the copy's differ only in its name, and it is
    named by its parameter columns in the tables, as the GEMM is."""
    require_tilelang()
    from conftest import run_batch
    from tilelang_churn.core import jobs

    mine = tmp_path / "my_mm.py"
    mine.write_text(kernels.shipped(kernels.BOOK_KERNEL).read_text())
    params = json.dumps({"M": 256, "N": 256, "K": 256, "block_M": 64, "block_N": 64, "block_K": 32})
    book = ("--mode", "instrument", "--shape", "256,256,256", "--block", "64,64,32")
    shipped = ("--mode", "instrument", "--kernel", "gemm", "--params", params)
    user = ("--mode", "instrument", "--kernel-file", str(mine), "--params", params)
    done = run_batch(tmp_path / "runs", [book, shipped, user])
    tables = {}
    for args, (proc, out) in done.items():
        assert proc.returncode == 0, proc.stdout
        tables[args] = [
            {k: v for k, v in row.items() if k != "seconds"} for row in passes_table.read_rows(out / "passes.csv")
        ]
    assert len(tables[book]) > 50 and tables[shipped] == tables[book]
    assert (
        json.loads((done[shipped][1] / "run.json").read_text())["spec"]
        == json.loads((done[book][1] / "run.json").read_text())["spec"]
    )
    named = {"kernel": "my_mm", "kernel_label": tables[book][0]["kernel_label"].replace("gemm(", "my_mm(")}
    assert tables[user] == [{**row, **named} for row in tables[book]]
    assert tables[user][0]["M"] == 256 and tables[user][0]["stages"] == 3  # a default, in its column
    label = jobs.config_label(tables[user][0])
    assert (
        label
        == jobs.config_label(tables[book][0])
        == "cuda-sm90 256x256x256 b64x64x32 float16/float32 t128 s3 instrument"
    )


def test_a_duplicate_kernel_or_parameter_set_is_refused(tmp_path):
    cfg = {"shapes": [], "targets": ["hip"], "modes": ["instrument"]}
    cfg["kernels"] = [
        {"name": "r", "shipped": "rmsnorm", "params": [{}]},
        {"name": "r", "shipped": "rmsnorm", "params": [{"N": 8}]},
    ]
    with pytest.raises(ConfigError, match=r"config kernels\[1\].name: 'r' is also the name of kernels\[0\]"):
        job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")
    cfg["kernels"] = [{"name": "r", "shipped": "rmsnorm", "params": [{"N": 8}, {"N": 8}]}]
    with pytest.raises(
        ConfigError, match=r"config kernels\[0\].params\[1\]: kernel 'r': .* the two jobs would be identical"
    ):
        job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")


ODD_KERNELS = {  # a build's body -> the error its row says
    "    raise NotImplementedError('T.gemm_sp needs 0.1.16')\n": "NotImplementedError: T.gemm_sp needs 0.1.16",
    "    return 42\n": "returned int, not a T.prim_func (tvm.",
}


@pytest.mark.integration
def test_a_kernel_that_raises_or_returns_no_primfunc_is_a_failed_row(tmp_path):
    """For one release a function may fail (an old release lacks a language feature): data, not a crash. Both
    kernels in one batch, as the workflow runs them."""
    require_tilelang()
    from conftest import run_batch

    jobs = {}
    for number, (body, error) in enumerate(ODD_KERNELS.items()):
        kernel = tmp_path / f"odd{number}" / "odd.py"
        kernel.parent.mkdir()
        kernel.write_text(f"def build(N=8):\n{body}")
        jobs["--mode", "instrument", "--kernel-file", str(kernel)] = error
    for args, (proc, out) in run_batch(tmp_path / "runs", list(jobs)).items():
        assert proc.returncode == 1, proc.stdout
        (row,) = passes_table.read_rows(out / "passes.csv")
        assert (row["status"], row["pass"], row["kernel"]) == ("failed", "setup", "odd") and jobs[args] in row["error"]
        assert "Traceback" not in proc.stdout  # the job's log: its stdout and stderr


@pytest.mark.integration
def test_a_bad_kernel_argument_exits_2_naming_kernel_file_and_value(tmp_path):
    proc = run_script("--mode", "instrument", "--kernel", "rmsnorm", "--params", '{"rows": 4}')
    assert proc.returncode == 2
    assert "argument --params: kernel 'rmsnorm': build() in " in proc.stderr and "'rows'" in proc.stderr
    proc = run_script("--mode", "instrument", "--kernel", "rmsnorm", "--shape", "8,8,8")
    assert proc.returncode == 2 and "argument --shape: a GEMM option" in proc.stderr


def test_a_kernel_file_is_read_as_python_reads_it(tmp_path):
    """A coding line (Latin-1, which Python imports) or a UTF-8 BOM: the signature is read, as an import would."""
    latin = tmp_path / "latin.py"
    latin.write_bytes("# -*- coding: latin-1 -*-\ndef build(name='caf\u00e9', N=8):\n    pass\n".encode("latin-1"))
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfdef build(N=8):\n    pass\n")
    assert kernels.read_signature(latin).params == {"name": "caf\u00e9", "N": 8}
    assert kernels.read_signature(bom).params == {"N": 8}
    unknown = tmp_path / "unknown.py"
    unknown.write_bytes(b"# coding: klingon\ndef build(N=8):\n    pass\n")
    with pytest.raises(kernels.KernelError, match=rf"^{unknown}: cannot be read \(unknown encoding"):
        kernels.read_signature(unknown)


def test_a_label_compares_by_type_and_quotes_a_string_that_reads_as_a_number():
    defaults = {"block": 64, "causal": False, "dtype": "float16"}
    assert kernels.label("k", {"block": 64, "causal": False, "dtype": "float16"}, defaults) == "k"
    assert kernels.label("k", {"block": 64.0}, defaults) == "k(block=64.0)"  # the job gets a float: not the default
    assert kernels.label("k", {"causal": 0}, defaults) == "k(causal=0)"
    assert kernels.label("k", {"block": "256", "dtype": "float32"}, defaults) == "k(block='256', dtype=float32)"
    assert kernels.label("k", {"block": 256}, defaults) == "k(block=256)"
    # a string is shown as written, backslashes and dollars included, in the quote it does not hold
    assert kernels.label("k", {"tag": "cost$\\frac{$usd"}, defaults) == "k(tag='cost$\\frac{$usd')"
    assert kernels.label("k", {"tag": "it's"}, defaults) == """k(tag="it's")"""


def test_the_signature_is_read_without_importing_the_file(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("import no_such_module\n\ndef build(N, *, block=64, dtype='float16', **extra):\n    pass\n")
    signature = kernels.read_signature(kernel)
    assert signature.params == {"N": kernels.REQUIRED, "block": 64, "dtype": "float16"} and signature.takes_any
    assert signature.problem({"N": 1, "anything": 2}) is None
    assert kernels.label("k", {"N": 1, "block": 64}, signature.defaults()) == "k(N=1)"
    assert kernels.folder_id("k", {"N": 1, "block": 64}, signature.defaults()) == "k_N1"


@pytest.mark.slow
def test_tilelangs_own_report_of_every_kernel_is_where_the_readme_says(kernels_run):
    workdir, _ = kernels_run
    readme = (Path(__file__).resolve().parents[1] / "docs" / "running.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| `runs/<version>/<target>/<shape>/trace-env/")]
    inside = row.split("`")[1].rstrip("/").split("/")[5:]  # below runs/<version>/<target>/<shape>/trace-env/
    jobs = list((workdir / "results" / "runs").glob("*/*/*/trace-env"))
    assert jobs and inside
    for job in jobs:  # the GEMM's, FlashAttention's and the user's kernel's alike
        assert (job.joinpath(*inside) / "report.html").is_file(), job
