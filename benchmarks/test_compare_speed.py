"""The comparison of releases' goals (issue 19; `make bench`, minutes): the pages' size and load time for the default
grid over two releases, the time to build the tables and pages for 8 releases, and the floor of a whole
instrument comparison with where its time goes.

- a real run of the default grid over 0.1.14 and 0.1.15 (`job_figures: false`, `job_files: tables`), or the one
  named by BENCH_COMPARE_RUN (a finished run's working directory): every page's bytes (limit: 20 MB together), and
  the load time of the largest pages and the index in Chromium (Playwright, executable_path; limit 1 s each);
- 8 releases x the default grid, made of copies of that run's jobs (benchmarks/compare_bench.py: real pass
  sequences, IR and edits): the tables and pages built by the compare command's code (limit 20 s), and with
  its two figures;
- the instrument comparison of the default grid over BENCH_FLOOR_RELEASES (default: every supported release),
  environments built first, then timed from an empty results/ at --cores 2: its wall time against the floor
  (sum of the jobs' lower_seconds + the batches' import seconds) / cores, from the same run (goal at most 1.5x),
  the same floor in CPU seconds, how busy the cores were, and the wall time of each part
  (results/bench/compare_floor.json).
Numbers go to results/bench/scale.csv (goal "compare"), as benchmarks/test_scale.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_scale import record, timed_snakemake

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import compare_bench  # noqa: E402

ENVS = REPO / ".envs"
TWO = ["0.1.14", "0.1.15"]


@pytest.fixture(scope="module")
def two_release_run(tmp_path_factory) -> Path:
    given = os.environ.get("BENCH_COMPARE_RUN")
    if given:
        return Path(given)
    pytest.importorskip("tilelang")
    workdir = tmp_path_factory.mktemp("compare_two")
    shutil.copytree(REPO / "config", workdir / "config")
    versions = json.dumps(TWO)
    timed_snakemake(
        workdir,
        "--cores",
        "2",
        "--config",
        f"versions={versions}",
        f"release_env_dir={ENVS}",
        "job_figures=False",
        "job_files=tables",
    )
    return workdir


def load_times(pages: list[Path]) -> dict[Path, float]:
    """loadEventEnd (ms) of each page, opened from file:// in Chromium."""
    sync_api = pytest.importorskip("playwright.sync_api")
    browser_path = shutil.which("chromium")
    if not browser_path:
        pytest.skip("chromium is not installed (make test installs it: tests/system_packages.py)")
    out = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            for path in pages:
                page.goto(path.as_uri())
                out[path] = float(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        finally:
            browser.close()
    return out


def test_pages_of_the_default_grid_over_two_releases(two_release_run):
    compare = two_release_run / "results" / "compare"
    pages = sorted((compare / "pages").glob("*.html"))
    assert pages, f"no pages under {compare}"
    total = sum(p.stat().st_size for p in pages) + (compare / "index.html").stat().st_size
    record("compare", f"pages of the default grid over {' and '.join(TWO)}: count", len(pages), "pages")
    record("compare", "pages of the default grid over two releases: bytes together", total / 1e6, "MB", 20)
    largest = sorted(pages, key=lambda p: p.stat().st_size)[-8:]
    record("compare", "largest page", largest[-1].stat().st_size / 1e6, "MB", 1)
    times = load_times([compare / "index.html", *largest])
    record("compare", "slowest load in Chromium (index and the 8 largest pages)", max(times.values()) / 1000, "s", 1)


def test_tables_and_pages_for_8_releases(two_release_run, tmp_path):
    passes = compare_bench.synthesise_releases(two_release_run, 8, tmp_path / "eight")
    listing = tmp_path / "passes.txt"
    listing.write_text("\n".join(map(str, passes)))
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]);"
        "from tilelang_churn.tables.release_tables import read_jobs;"
        "from tilelang_churn.figures.release_figures import resolve_pass_links, write_all;"
        "t = time.perf_counter(); churn, archives = read_jobs(open(sys.argv[2]).read().split());"
        "w = write_all(churn, archives, sys.argv[3], formats=sys.argv[4:], pass_links=resolve_pass_links(churn, {}));"
        "print(time.perf_counter() - t, len(w['pages']))"
    )
    for formats, what, limit in (
        ([], "8 releases x default grid: tables and pages", 20),
        (["png", "svg"], "8 releases x default grid: tables, pages and both figures", None),
    ):
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", code, str(REPO / "scripts"), str(listing), str(tmp_path / "out"), *formats],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        assert proc.returncode == 0, proc.stderr[-3000:]
        record("compare", what + " (process, imports included)", wall, "s", limit)
    record("compare", "8 releases x default grid: jobs", len(passes), "jobs")


def test_instrument_comparison_floor(tmp_path):
    pytest.importorskip("tilelang")
    releases = json.loads(os.environ.get("BENCH_FLOOR_RELEASES", "null")) or compare_bench.supported_releases()
    workdir = tmp_path / "floor"
    shutil.copytree(REPO / "config", workdir / "config")
    config = ["--config", f"versions={json.dumps(releases)}", f"release_env_dir={ENVS}", "modes=[instrument]"]
    markers = [str(ENVS / f"tilelang-{v}" / "environment.json") for v in releases if v != "0.1.15"]
    if markers:  # environments built first: not part of the timed run
        timed_snakemake(workdir, "--cores", "2", *markers, *config)  # targets before --config
    shutil.rmtree(workdir / "results", ignore_errors=True)
    shutil.rmtree(workdir / "logs", ignore_errors=True)
    shutil.rmtree(workdir / ".snakemake" / "log", ignore_errors=True)
    run = timed_snakemake(workdir, "--cores", "2", *config)
    wall = run.wall_seconds
    report = compare_bench.floor_report(workdir, wall, cores=2, cpu_seconds=run.cpu_seconds)
    out = REPO / "results" / "bench" / "compare_floor.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"releases": releases, **report}, indent=2) + "\n")
    n = len(releases)
    record("compare", f"instrument comparison, {n} releases x default grid, --cores 2: wall", wall, "s")
    record(
        "compare",
        f"instrument comparison, {n} releases: floor (lowering + imports) / cores",
        report["floor_seconds"],
        "s",
    )
    record("compare", f"instrument comparison, {n} releases: wall / floor", report["ratio"], "x", 1.5)
    what = f"instrument comparison, {n} releases"
    record("compare", f"{what}: CPU floor (lowering + imports) / cores", report["cpu_floor_seconds"], "s")
    record("compare", f"{what}: wall / CPU floor", report["cpu_ratio"], "x", 1.5)
    record("compare", f"{what}: cores busy (CPU of every process / cores x wall)", report["busy"], "")
