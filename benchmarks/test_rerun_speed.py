"""Issue 28's goals of cost that follows the change (run with `make bench`; minutes, not part of `make test`):

- editing one single-configuration user kernel of a finished default grid reruns its jobs and what reads them
  (the kernel's batch and figures, churn.csv and the heatmap, which reads it; the book's figures read only the book
  kernel's jobs): under 15 s at `--cores 2`;
- the comparison of 8 releases x the default grid x 4 modes at `--cores 2` from an empty `results/` (release
  environments built first): its wall time against its floor (the lowerings' and imports' CPU seconds over the
  cores, a shared lowering once: compare_bench.floor_report), goal 1.3x, and the floor with every job lowering on
  its own (config share_lowering: false), which the shared lowerings must undercut;
- adding one release to that finished comparison: at most that release's share of the full run (its lowerings'
  and imports' CPU against the whole floor's) plus 20 s; of the book, only figure 3 (which reads the comparison)
  is redrawn.

Numbers go to results/bench/scale.csv (goal f), as benchmarks/test_scale.py's do.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from test_scale import record, timed_snakemake

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import compare_bench  # noqa: E402
from tilelang_churn.batching import job_cost  # noqa: E402  (scripts/ on sys.path: compare_bench)

ENVS = REPO / ".envs"
# a kernel of the user's, one configuration: the shipped RMSNorm under another name, in a file of the user's
USER_KERNEL = {"name": "my_rmsnorm", "file": "my_kernels/my_rmsnorm.py", "params": [{}]}


def rules_run(workdir: Path) -> list[str]:
    """The rules the last Snakemake run of WORKDIR ran, from its log."""
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    text = logs[-1].read_text(errors="replace")
    return [line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith(("rule ", "localrule "))]


def test_editing_one_user_kernel_reruns_its_jobs_and_what_reads_them(tmp_path):
    pytest.importorskip("tilelang")
    shutil.copytree(REPO / "config", tmp_path / "config")
    (tmp_path / "my_kernels").mkdir()
    kernel = tmp_path / "my_kernels" / "my_rmsnorm.py"
    shutil.copy(REPO / "workflow" / "kernels" / "rmsnorm.py", kernel)
    config = yaml_kernels(REPO / "config" / "config.yaml", USER_KERNEL)
    (tmp_path / "config" / "with_kernel.yaml").write_text(json.dumps(config))  # JSON is YAML
    args = ("--cores", "2", "--configfile", "config/with_kernel.yaml")
    timed_snakemake(tmp_path, *args)
    kernel.write_text(kernel.read_text() + "\n# an edit: this comment\n")
    rerun = timed_snakemake(tmp_path, *args)
    ran = rules_run(tmp_path)
    traced = [rule for rule in ran if rule.startswith("trace_")]
    assert traced and all("my_rmsnorm" in rule for rule in traced), ran  # its batches only
    record("f", "editing one single-configuration user kernel: rerun, --cores 2", rerun.wall_seconds, "s", 15)
    record("f", "editing one user kernel: steps rerun", len(ran), "steps")


def yaml_kernels(config_file: Path, kernel: dict) -> dict:
    import yaml

    config = yaml.safe_load(config_file.read_text())
    config["kernels"] = [*config.get("kernels", []), kernel]
    return config


def full_comparison(workdir: Path, releases: list[str], share: bool) -> tuple[dict, list[str]]:
    """The comparison of RELEASES x the default grid x its 4 modes, environments built first, then timed from an
    empty results/ at --cores 2: its floor report."""
    shutil.copytree(REPO / "config", workdir / "config", dirs_exist_ok=True)
    config = ["--config", f"versions={json.dumps(releases)}", f"release_env_dir={ENVS}", f"share_lowering={share}"]
    markers = [str(ENVS / f"tilelang-{v}" / "environment.json") for v in releases if v != "0.1.15"]
    if markers:  # environments built first: not part of the timed run
        timed_snakemake(workdir, "--cores", "2", *markers, *config)
    for folder in ("results", "logs", ".snakemake/log"):
        shutil.rmtree(workdir / folder, ignore_errors=True)
    run = timed_snakemake(workdir, "--cores", "2", *config)
    return compare_bench.floor_report(workdir, run.wall_seconds, cores=2, cpu_seconds=run.cpu_seconds), config


def releases_under_test() -> list[str]:
    return json.loads(os.environ.get("BENCH_FLOOR_RELEASES", "null")) or compare_bench.supported_releases()


@pytest.fixture(scope="module")
def shared_comparison(tmp_path_factory) -> tuple[Path, dict, list[str]]:
    pytest.importorskip("tilelang")
    workdir = tmp_path_factory.mktemp("full_comparison")
    report, config = full_comparison(workdir, releases_under_test(), share=True)
    out = REPO / "results" / "bench" / "full_comparison_floor.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return workdir, report, config


def test_the_full_comparison_within_1_3x_of_its_floor(shared_comparison):
    _, report, _ = shared_comparison
    what = f"{len(releases_under_test())} releases x default grid x 4 modes, --cores 2"
    record("f", f"{what}: wall", report["wall_seconds"], "s")
    record("f", f"{what}: floor (lowering + imports, CPU) / cores", report["cpu_floor_seconds"], "s")
    record("f", f"{what}: jobs recorded from another job's lowering", report["served_by_another_lowering"], "jobs")
    record("f", f"{what}: cores busy (CPU of every process / cores x wall)", report["busy"], "")
    record("f", f"{what}: wall / floor", report["cpu_ratio"], "x", 1.3)


def test_the_shared_lowerings_lower_the_floor(shared_comparison, tmp_path):
    _, shared, _ = shared_comparison
    alone, _ = full_comparison(tmp_path, releases_under_test(), share=False)
    what = f"{len(releases_under_test())} releases x default grid x 4 modes"
    floor = alone["cpu_floor_seconds"]
    record("f", f"{what}: floor, every job lowering on its own (share_lowering: false)", floor, "s")
    record("f", f"{what}: wall, every job lowering on its own", alone["wall_seconds"], "s")
    assert shared["cpu_floor_seconds"] < alone["cpu_floor_seconds"]


def test_adding_one_release_reruns_that_release_and_the_comparison(shared_comparison):
    workdir, report, config = shared_comparison
    releases = releases_under_test()
    added = releases[len(releases) // 2]  # one in the middle: both its neighbours' pairs change
    cost = release_cpu(workdir, added)
    shutil.rmtree(workdir / "results" / "runs" / added)
    fewer = [release for release in releases if release != added]
    timed_snakemake(workdir, "--cores", "2", *config[:1], f"versions={json.dumps(fewer)}", *config[2:])
    rerun = timed_snakemake(workdir, "--cores", "2", *config)
    ran = rules_run(workdir)
    traced = {rule for rule in ran if rule.startswith("trace_")}
    assert traced and all(added.replace(".", "_") in rule for rule in traced), traced
    assert "book_releases_figure" in ran and "book_figures_render" not in ran, ran  # of the book, figure 3 alone
    share = report["wall_seconds"] * cost / (report["cpu_floor_seconds"] * 2)
    record("f", f"adding release {added} to the finished comparison: its share of the full run", share, "s")
    record("f", f"adding release {added} to the finished comparison: rerun, --cores 2", rerun.wall_seconds, "s",
           round(share + 20, 1))  # fmt: skip


def release_cpu(workdir: Path, release: str) -> float:
    """CPU seconds of one release's lowerings (a shared one once) and trace imports, from its run.json files."""
    lower, imports = 0.0, {}
    for run_json in (workdir / "results" / "runs" / release).glob("*/*/*/run.json"):
        info = json.loads(run_json.read_text())
        if not job_cost.lowered_by_another(info):
            lower += float(info.get("lower_cpu_seconds") or 0.0)
        process = info.get("process") or {}
        imports[process.get("pid")] = float(process.get("import_cpu_seconds") or 0.0)
    return lower + sum(imports.values())
