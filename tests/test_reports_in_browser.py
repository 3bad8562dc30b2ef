"""Both HTML reports open in a real browser: the workflow's `snakemake --report` and one job's TileLang report.

The book's criterion for trace-env is "report.html is generated and can be opened"; here it is opened in
headless Chromium (Debian's `chromium`): each page must render (a screenshot that is not blank) and show
its content after its JavaScript ran (the DOM Chromium dumps): TileLang's pass list, equal to the job's
passes.csv, and one of the book's figures in the Snakemake report.

Chromium is installed by `make test` (tests/system_packages.py) where the machine lets it (root with
apt-get). Where it is missing the tests are skipped with a reason naming the package (shown by pytest -ra);
under CI=true they fail instead.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
import system_packages
from tilelang_churn.core import passes_table as pt

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WINDOW = (1280, 900)


def find_browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


@pytest.fixture(scope="module")
def browser() -> str:
    found = find_browser()
    if found is None:  # installed by `make test` (tests/system_packages.py) where the machine lets it
        system_packages.require("chromium")
        found = find_browser()
    assert found, "chromium is installed but none of " + ", ".join(BROWSERS) + " is on PATH"
    return found


def chromium(browser: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """One headless Chromium run on its own profile; as root it needs --no-sandbox."""
    command = [
        browser,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--virtual-time-budget=15000",  # let the page's JavaScript run before the dump or the screenshot
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def screenshot(browser: str, tmp_path: Path, page: Path) -> np.ndarray:
    shot = tmp_path / "screenshot.png"
    proc = chromium(browser, tmp_path, f"--screenshot={shot}", page.resolve().as_uri())
    assert shot.is_file(), proc.stderr[-2000:]
    return mpimg.imread(shot)[..., :3]


def assert_not_blank(pixels: np.ndarray, what: str) -> None:
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0]), what
    background = np.median(pixels.reshape(-1, 3), axis=0)
    differs = np.abs(pixels - background).max(axis=2) > 0.1
    assert differs.mean() > 0.01 and pixels.std() > 0.02, f"{what}: the screenshot is blank"


def dump_dom(browser: str, tmp_path: Path, page: Path) -> str:
    proc = chromium(browser, tmp_path, "--dump-dom", page.resolve().as_uri())
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def test_the_tilelang_report_of_a_trace_env_job_renders_its_pass_list(browser, book_run, tmp_path):
    job = book_run.job_dir("cuda-sm90", "256x256x256_b64x64x32")
    report = job / "lower_trace" / "gemm_lower_trace" / "report.html"
    assert report.exists(), f"{report}: trace-env wrote no report.html"
    assert_not_blank(screenshot(browser, tmp_path, report), str(report))
    dom = dump_dom(browser, tmp_path, report)
    assert "TileLang Lower Trace" in dom
    # the pass list, after the page's script marked the first pass active: the steps of our passes.csv
    assert 'class="pass-link active"' in dom, "the report's JavaScript did not run"
    shown = re.findall(
        r'<span class="pass-idx">(\d+)</span><span class="pass-dot[^"]*"></span><span class="pass-label">([^<]*)</',
        dom,
    )
    rows = pt.read_rows(job / "passes.csv")
    assert {(int(idx), name) for idx, name in shown} == {(row["step"], row["pass"]) for row in rows}
    assert f"{len(rows)} passes recorded" in dom


# Appended to a copy of the Snakemake report: clicks through the app as a reader would (the category "Book
# figures", the row of figure 1, its eye button) and records on <body data-driver> what it found.
DRIVER = """
<script>
(function () {
  const log = [];
  const byText = (selector, text) => [...document.querySelectorAll(selector)].find(e => e.textContent.trim() === text);
  function step(k) {
    if (k === 0) { const a = byText("a", "Book figures"); log.push("category:" + !!a); if (a) a.click(); }
    if (k === 1) { const a = byText("a", "language en"); if (a) a.click(); }  // only with several languages
    if (k === 2) {
      const cell = byText("td", "fig1_reference_passes");
      log.push("figure:" + !!cell);
      const view = cell && cell.closest("tr").querySelector("a");
      if (view) view.click();
    }
    if (k === 3) {
      const img = [...document.querySelectorAll("img")].find(i => i.src.startsWith("data:image/png"));
      log.push("image-width:" + (img ? img.naturalWidth : 0));
      document.body.setAttribute("data-driver", log.join(","));
      return;
    }
    setTimeout(() => step(k + 1), 1000);
  }
  window.addEventListener("load", () => setTimeout(() => step(0), 1000));
})();
</script>
"""


def test_the_snakemake_report_renders_with_the_book_figures(browser, book_run, tmp_path):
    report = book_run.workdir / "results" / "report.html"
    assert report.stat().st_size > 100_000
    first = screenshot(browser, tmp_path, report)
    assert_not_blank(first, str(report))
    dom = dump_dom(browser, tmp_path, report)
    rendered = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # what the app drew, not its data
    for category in ("Book figures", "Churn heatmap", "Per-job churn"):
        assert category in rendered, f"{category!r} is not in the report's menu"
    # open figure 1 as a reader would, in a copy of the report with a small driver script
    html = report.read_text(encoding="utf-8")
    end = html.rindex("</body>")
    driven = tmp_path / "driven.html"
    driven.write_text(html[:end] + DRIVER + html[end:], encoding="utf-8")
    found = re.search(r'data-driver="([^"]*)"', dump_dom(browser, tmp_path, driven))
    assert found, "the driver script did not finish"
    width = mpimg.imread(book_run.workdir / "results" / "book" / "en" / "fig1_reference_passes.png").shape[1]
    assert found.group(1) == f"category:true,figure:true,image-width:{width}"  # the PNG the book rule wrote
    shown = screenshot(browser, tmp_path, driven)
    assert_not_blank(shown, "report with figure 1 open")
    assert np.abs(shown - first).max(axis=2).mean() > 0.05, "opening figure 1 changed nothing on the screen"
