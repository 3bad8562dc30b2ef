"""The comparison pages (figures/compare_pages.py): their content, that they are self-contained, and, in Debian's
Chromium driven by Playwright (executable_path: Playwright downloads no browser), that a reader can open the index,
follow a link, choose a pass and see both releases' diff of it."""

from __future__ import annotations

import atexit
import contextlib
import functools
import html
import json
import re
import time
from pathlib import Path

import pytest
import system_packages
from conftest import entry, other_kernel
from test_compare_releases import CONFIG, LABEL, frame, job_rows, run, write_archive, write_jobs
from test_reports_in_browser import find_browser
from tilelang_churn.figures import compare_pages, page_templates
from tilelang_churn.tables import release_tables as cr


def built(tmp_path: Path) -> Path:
    out = tmp_path / "compare"
    paths = [str(p) for p in write_jobs(tmp_path / "runs")]
    assert entry("compare_releases").main(["--out-dir", str(out), "--formats", "png", *paths]) == 0
    return out


def test_the_index_links_every_pair_to_its_page(tmp_path):
    out = built(tmp_path)
    index = (out / "index.html").read_text()
    links = set(re.findall(r'<a href="(pages/[^"]+)"', index))  # each twice: its sentence, its table row
    assert len(links) == 4 and all((out / link).is_file() for link in links)  # 2 configurations x 2 pairs
    assert sorted(links) == sorted(f"pages/{p.name}" for p in (out / "pages").iterdir())
    assert "LowerTileOp" in index and "0.1.8 → 0.1.9" in index


def test_pages_are_self_contained(tmp_path):
    """Nothing loads from the network; the only addresses outside are links a reader may follow (pass names to
    TileLang's source)."""
    out = built(tmp_path)
    outward = 0
    for page in [out / "index.html", *(out / "pages").iterdir()]:
        text = page.read_text()
        assert "<style>" in text and "<script>" in text
        assert not re.search(r'src="(https?:)?//', text), page
        assert not re.search(r"<(link|img|iframe|object|embed)\b", text), page
        links = re.findall(r'<a\b[^>]*\bhref="((?:https?:)?//[^"]*)"', text)
        assert len(re.findall(r'href="(?:https?:)?//', text)) == len(links), page  # each one an <a>
        outward += len(links)
    assert outward  # the index's pass names link out


def test_ir_text_cannot_close_the_data_script(tmp_path):
    old = job_rows("0.1.14", [run("P0", added=1)])
    new = job_rows("0.1.15", [run("P0", added=1)])
    nasty = 'A\nB = "</script><script>alert(1)</script>"'
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "o.gz", "A", ["A\nX"], names=["P0"]),
        cr.job_key(new[0]): write_archive(tmp_path / "n.gz", "A", [nasty], names=["P0"]),
    }
    churn = frame(old, new)
    edits = compare_pages.pass_edits.EditCache(archives)
    written = compare_pages.write_pages(
        cr.configurations(churn), cr.divergence(churn, archives, edits), edits, tmp_path
    )
    text = written[1].read_text()
    assert text.count("</script>") == 2  # the data block's and the page script's own
    assert "alert(1)" in text and "≠" in text


# ----------------------------------------------------------------------------------------------- browser


def chromium_path() -> str:
    found = find_browser()
    if found is None:  # installed by `make test` (tests/system_packages.py) where the machine lets it
        system_packages.require("chromium")
        found = find_browser()
    assert found, "chromium is installed but not on PATH"
    return found


@functools.cache
def chromium_browser():
    """Headless Chromium (Debian's, through Playwright), launched once per test process (0.8 s of CPU a launch) and
    closed as the process exits; each page opens in a context of its own (cookies, storage, cache apart)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    playwright = sync_api.sync_playwright().start()
    atexit.register(playwright.stop)
    return playwright.chromium.launch(
        executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    )


@contextlib.contextmanager
def chromium_page(viewport: dict):
    """A page of headless Chromium in a fresh context and the list its errors are collected into: uncaught
    exceptions, console errors and, when asked, dialogs and requests that leave the file system."""
    context = chromium_browser().new_context(viewport=viewport)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(f"pageerror {exc}"))
        page.on("console", lambda msg: errors.append(f"console {msg.text}") if msg.type == "error" else None)
        page.on("dialog", lambda dialog: (errors.append(f"dialog {dialog.message}"), dialog.dismiss()))
        page.on(
            "request",
            lambda request: errors.append(f"request {request.url}") if not request.url.startswith("file:") else None,
        )
        yield page, errors
    finally:
        context.close()


def drive(compare_dir: Path, link_text: str, screenshot: Path | None = None, both_changed: bool = False) -> dict:
    """Open index.html, follow the link whose row contains link_text, choose the first divergent edit (else the
    first row whose edits differ; with both_changed, the first row whose edits differ and whose two runs both
    changed the IR); return what the page showed and how long it took."""
    with chromium_page({"width": 1600, "height": 1000}) as (page, errors):
        page.goto((compare_dir / "index.html").as_uri())
        row = page.locator("#pairs tbody tr", has_text=link_text).first
        row.locator("a").click()
        page.wait_for_load_state("load")
        load_ms = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        target = page.locator("#seq tbody tr.firstedit")
        if both_changed:
            index = page.evaluate(
                """() => [...document.querySelectorAll('#seq tbody tr')].findIndex(tr =>
                    tr.querySelector('td.mark.diff') &&
                    [...tr.querySelectorAll('td.oldc, td.newc')].every(td => !/^\\+0 -0$/.test(td.textContent)))"""
            )
            assert index >= 0, "no pass whose two runs both changed the IR and edit differently"
            target = page.locator("#seq tbody tr").nth(index)
        if not target.count():
            target = page.locator("#seq tbody tr", has=page.locator("td.mark.diff"))
        target.first.click()
        shown = {
            "url": page.url,
            "load_ms": load_ms,
            "selected": page.locator("#seq tbody tr.selected").inner_text(),
            "old_title": page.inner_text("#old-title"),
            "new_title": page.inner_text("#new-title"),
            "old_diff": page.inner_text("#old-diff"),
            "new_diff": page.inner_text("#new-diff"),
            "source_diff": page.inner_text("#source-diff"),
            "errors": errors,
        }
        page.keyboard.press("ArrowUp")
        shown["after_arrow"] = page.locator("#seq tbody tr.selected").inner_text()
        if screenshot is not None:
            target.first.click()
            page.screenshot(path=str(screenshot))
        return shown


@pytest.mark.slow  # a browser: left out of make check, as the other browser tests
def test_a_reader_follows_a_link_and_chooses_a_pass(tmp_path):
    out = built(tmp_path)
    started = time.perf_counter()
    shown = drive(out, "0.1.8 → 0.1.9", tmp_path / "page.png")
    assert time.perf_counter() - started < 60
    assert shown["errors"] == []
    assert "__0.1.8__0.1.9.html" in shown["url"] and "cuda-sm90" in shown["url"]
    # the first divergent edit: LowerTileOp (+30/-12 in 0.1.8, +32/-12 in 0.1.9), both sides' diff text
    assert "LowerTileOp" in shown["selected"]
    assert shown["old_title"].startswith("0.1.8: LowerTileOp") and shown["new_title"].startswith("0.1.9: LowerTileOp")
    assert re.search(r"^\+", shown["old_diff"], re.M) and re.search(r"^\+", shown["new_diff"], re.M)
    assert shown["old_diff"] != shown["new_diff"]
    assert shown["after_arrow"] != shown["selected"]
    assert shown["load_ms"] < 1000


def check_real_pages(compare_dir: Path, shot: Path) -> dict:
    """The pages of a real run (test_workflow.py's compared_run): an instrument pair, its first divergent edit."""
    shown = drive(compare_dir, "instrument", shot, both_changed=True)
    assert shown["errors"] == []
    assert "instrument" in shown["url"]
    for side in ("old", "new"):
        assert re.search(r"^[-+]", shown[f"{side}_diff"], re.M), (side, shown[f"{side}_diff"][:500])
    assert shown["load_ms"] < 1000
    return shown


def pair_outputs(tmp_path: Path, archived: bool = True) -> tuple[str, dict]:
    """0.1.15 runs an extra pass (P1) that rewrites the IR; P0 and P2 make the same edit in both releases, on IR
    that already differs before the first pass. (index HTML, the page's data)"""
    old = job_rows("0.1.14", [run("P0"), run("P2")])
    new = job_rows("0.1.15", [run("P0"), run("P1", added=2, deleted=1), run("P2")])
    archives = {}
    if archived:
        archives = {
            cr.job_key(old[0]): write_archive(tmp_path / "o.gz", "a\nb", ["a\nb\nx", "a\nb\nx\ny"], names=["P0", "P2"]),
            cr.job_key(new[0]): write_archive(
                tmp_path / "n.gz", "a\nc", ["a\nc\nx", "q\nr\nc\nx", "q\nr\nc\nx\ny"], names=["P0", "P1", "P2"]
            ),
        }
    churn = frame(old, new)
    edits = compare_pages.pass_edits.EditCache(archives)
    written = compare_pages.write_pages(
        cr.configurations(churn), cr.divergence(churn, archives, edits), edits, tmp_path
    )
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', written[1].read_text(), re.S)
    return written[0].read_text(), json.loads(data.group(1))


def test_a_pair_whose_kept_passes_all_edit_alike_says_so_and_opens_on_the_added_pass(tmp_path):
    index, data = pair_outputs(tmp_path)
    assert '<td class="good wrap">none: every kept pass edits alike</td>' in index
    shown = data["rows"][data["start"]]
    assert shown["op"] == "added" and shown["new"]["pass"] == "P1"


def test_a_pair_without_ir_archives_does_not_claim_alike_edits(tmp_path):
    index, _ = pair_outputs(tmp_path, archived=False)
    assert "edits alike" not in index
    (row,) = re.findall(r"<tr data-search=\"[^\"]*\"><td class=\"num\">1</td>.*?</tr>", index)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[3] == "—"  # the difference: unknown without archives
    assert cells[6] == "—"  # the first divergent edit: unknown, not none


# ------------------------------------------------------------------------------------- any text, any name

# text that reaches a page's data from a kernel (a parameter through T.func_attr or T.call_extern): an HTML
# comment opener, both script tags, the JavaScript line separators
# (the IR's diff splits lines at U+2028 as Python does, so the separators are checked on the data alone)
NASTY = 'T.func_attr({"tag": "<!-- x -->"}) T.call_extern("</script><script>alert(1)</script>") & $HOME'
SEPARATORS = "a\u2028b\u2029c"


def data_block(text: str):
    """The page's data block read back with a real JSON parser."""
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


def nasty_pair(tmp_path: Path) -> list[Path]:
    """One configuration on two releases whose only pass writes NASTY into the IR of the new release."""
    old = job_rows("0.1.14", [run("P0", added=1)], mode="instrument")
    new = job_rows("0.1.15", [run("P0", added=1)], mode="instrument")
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "o.gz", "A", ["A\nX"], names=["P0"]),
        cr.job_key(new[0]): write_archive(tmp_path / "n.gz", "A", [f"A\n{NASTY}"], names=["P0"]),
    }
    churn = frame(old, new)
    edits = compare_pages.pass_edits.EditCache(archives)
    return compare_pages.write_pages(
        cr.configurations(churn), cr.divergence(churn, archives, edits), edits, tmp_path / "compare"
    )


def test_any_text_survives_the_data_block_as_json():
    data = {"lines": [NASTY, SEPARATORS, "<!--", "-->", "</script>", "<script>", "a&b", "<\\!--"], "start": 0}
    page = page_templates.render("base.html.j2", title="t", data=data)
    assert data_block(page) == data
    assert page.count("<script") == 1 and page.count("</script>") == 1  # only the data block's own tags


def test_a_pages_data_holds_the_ir_text_as_written(tmp_path):
    written = nasty_pair(tmp_path)
    data = data_block(written[1].read_text())
    assert NASTY in data["lines"]
    (shown,) = data["rows"]
    assert [data["lines"][v >> 2] for v in shown["new"]["diff"] if v & 3 == 1] == [NASTY]  # the added line


def test_a_page_name_fits_a_file_name_and_keeps_the_whole_label_apart(tmp_path):
    long = "cuda-sm90 tagged(tag=" + "x" * 300 + ") instrument"
    name = page_templates.page_name(f"{long}__0.1.14__0.1.15")
    assert len(f".{name}.html.4194304.tmp".encode()) < 255  # the page and atomic_file's temporary
    assert name.startswith("cuda-sm90_tagged_tag_xxx")
    assert page_templates.page_name(f"{long}__0.1.14__0.1.15") == name  # stable: the same page on a rerun
    assert page_templates.page_name(f"{long}y__0.1.14__0.1.15") != name  # the hash is of the whole label
    assert page_templates.page_name("cuda-sm90 1024x1024 instrument__0.1.14__0.1.15") == (
        "cuda-sm90_1024x1024_instrument__0.1.14__0.1.15"
    )  # short names as before


def long_label_pages(out: Path) -> tuple[list, list[Path]]:
    """The pages of one configuration whose label holds an unbroken 300-character value."""
    tag = "x" * 300
    kernel = other_kernel("tagged", json.dumps({"tag": tag}), f"tagged(tag={tag})")
    old = job_rows("0.1.14", [run("P0")], **kernel)
    new = job_rows("0.1.15", [run("P0")], **kernel)
    churn = frame(old, new)
    configs = cr.configurations(churn)
    edits = compare_pages.pass_edits.EditCache({})
    return configs, compare_pages.write_pages(configs, cr.divergence(churn, {}, edits), edits, out)


def long_label_index(out: Path) -> Path:
    return long_label_pages(out)[1][0]


def test_a_configuration_of_300_characters_gets_its_page(tmp_path):
    configs, (index, page) = long_label_pages(tmp_path)
    assert len(configs[0].label) > 300
    assert page.is_file() and len(page.name.encode()) <= page_templates.MAX_PAGE_NAME
    assert f'href="pages/{page.name}"' in index.read_text()


def test_a_page_that_cannot_be_written_is_named_on_the_index_and_stderr(tmp_path, capsys):
    old = job_rows("0.1.14", [run("P0")])
    new = job_rows("0.1.15", [run("P0")])
    churn = frame(old, new)
    configs = cr.configurations(churn)
    name = page_templates.page_name(f"{configs[0].label}__0.1.14__0.1.15")
    (tmp_path / "pages" / f"{name}.html").mkdir(parents=True)  # a folder where the page goes: rename fails
    edits = compare_pages.pass_edits.EditCache({})
    written = compare_pages.write_pages(configs, cr.divergence(churn, {}, edits), edits, tmp_path)
    assert written == [tmp_path / "index.html"]  # the index is written all the same
    index = written[0].read_text()
    assert f"page not written: cannot write {tmp_path / 'pages' / name}.html: is a directory" in index
    # the label as the pages show it: the configuration's, with the kernel's name after the target
    shown = configs[0].label.replace("cuda-sm90 ", "cuda-sm90 gemm ", 1)
    assert shown in index and 'href="pages/' not in index
    err = capsys.readouterr().err
    assert f"the page of {configs[0].label}: 0.1.14 → 0.1.15 was not written: cannot write" in err


# ------------------------------------------------------------------------------------ a release that fails

SETUP_ERROR = "AttributeError: module 'tilelang.language' has no attribute 'func_attr'"


def test_a_kernel_that_fails_on_one_release_says_so_with_its_error(tmp_path):
    """0.1.14 fails in setup (the kernel uses what that release lacks): no archive, for that reason, and the error
    text on the page and in the pane of its run."""
    old = job_rows("0.1.14", [run("setup", status="failed", error=SETUP_ERROR)], mode="instrument")
    new = job_rows("0.1.15", [run("P0", added=2), run("P1")], mode="instrument")
    archives = {
        cr.job_key(old[0]): tmp_path / "runs" / "0.1.14" / "ir.json.gz",  # never written: the job failed first
        cr.job_key(new[0]): write_archive(tmp_path / "n.gz", "A", ["A\nB\nC", "A\nB\nC"], names=["P0", "P1"]),
    }
    churn = frame(old, new)
    edits = compare_pages.pass_edits.EditCache(archives)
    written = compare_pages.write_pages(
        cr.configurations(churn), cr.divergence(churn, archives, edits), edits, tmp_path / "compare"
    )
    text = written[1].read_text()
    assert "only instrument jobs keep it" not in text
    assert "No IR to diff: the lowering failed on 0.1.14 at step 0 setup (error below)." in text
    assert '<b class="bad">0.1.14: the lowering failed</b> at step 0 setup:' in text
    assert f"<pre>{html.escape(SETUP_ERROR)}</pre>" in text
    setup = next(r["old"] for r in data_block(text)["rows"] if r["old"])
    assert setup["error"] == SETUP_ERROR and setup["status"] == "failed"


def test_a_mode_that_keeps_no_ir_is_still_the_reason_given(tmp_path):
    old = job_rows("0.1.14", [run("P0")])  # trace-env: keeps no IR
    new = job_rows("0.1.15", [run("P0")])
    churn = frame(old, new)
    edits = compare_pages.pass_edits.EditCache({})
    written = compare_pages.write_pages(cr.configurations(churn), cr.divergence(churn, {}, edits), edits, tmp_path)
    assert "(only instrument jobs keep it, when releases are compared)" in written[1].read_text()
    assert 'class="failure"' not in written[1].read_text()


@pytest.mark.slow  # a browser
def test_a_page_whose_ir_holds_html_opens_in_chromium_and_a_pass_can_be_chosen(tmp_path):
    page_path = nasty_pair(tmp_path)[1]
    with chromium_page({"width": 1400, "height": 700}) as (page, errors):
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        assert errors == []  # no 'Bad escaped character in JSON', and the IR's script never ran (no alert)
        page.locator("#seq tbody tr").first.click()
        selected = page.locator("#seq tbody tr.selected").inner_text()
        new_diff = page.inner_text("#new-diff")
        page.screenshot(path=str(tmp_path / "nasty.png"))
        # an unbroken 300-character label wraps: the index's columns stay in a 1400-px window
        index = long_label_index(tmp_path / "long")
        page.goto(index.as_uri())
        page.wait_for_load_state("load")
        index_width = page.evaluate("document.documentElement.scrollWidth")
    assert errors == []
    assert "P0" in selected
    assert f"+{NASTY}" in new_diff.splitlines()
    assert index_width <= 1400, index_width


def script_pair(tmp_path: Path) -> Path:
    """A pair page made for its script (compare_page.js): the frontend's IR differs in one line's indent and one
    line the newer release adds; P0 makes the same edit in both releases; P1 adds ten lines both releases add and
    one each that differ in a word; P2 runs in the newer release alone."""
    shared = "".join(f"\ns{k} = {k}" for k in range(10))
    old_init, new_init = "def f():\n  x = 1\n  y = 2", "def f():\n    x = 1\n  y = 2\n  w = 3"
    old = job_rows("0.1.14", [run("P0"), run("P1", added=11)], mode="instrument")
    new = job_rows("0.1.15", [run("P0"), run("P1", added=11), run("P2")], mode="instrument")
    old_afters = [old_init + "\nz = 0", old_init + "\nz = 0" + shared + "\nr = a + b"]
    new_afters = [new_init + "\nz = 0", new_init + "\nz = 0" + shared + "\nr = a + c"]
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "o.gz", old_init, old_afters, names=["P0", "P1"]),
        cr.job_key(new[0]): write_archive(
            tmp_path / "n.gz", new_init, [*new_afters, new_afters[-1] + "\nq"], names=["P0", "P1", "P2"]
        ),
    }
    churn = frame(old, new)
    edits = compare_pages.pass_edits.EditCache(archives)
    written = compare_pages.write_pages(
        cr.configurations(churn), cr.divergence(churn, archives, edits), edits, tmp_path / "compare"
    )
    return written[1]


@pytest.mark.slow  # a browser
def test_the_pair_pages_script_draws_each_view_and_follows_keys_toggles_and_permalinks(tmp_path):
    """What compare_page.js does, as the DOM shows it: the page opens on the first divergent edit with its
    permalink; the third view folds the lines both edits add and highlights the word each changes; the keys step
    to the previous pass and to the passes that edit differently; a pass one release alone runs says so; hiding
    alike passes hides P0; ignoring whitespace shows the frontend's re-indented line once, as a 'w' line."""
    path = script_pair(tmp_path)
    seen = {}
    with chromium_page({"width": 1400, "height": 900}) as (page, errors):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")

        def selected():
            return page.evaluate("document.querySelector('#seq tbody tr.selected').dataset.k")

        seen["opened"] = (selected(), page.evaluate("location.hash"), page.inner_text("#verdict"))
        seen["titles"] = (page.inner_text("#old-title"), page.inner_text("#new-title"))
        seen["edit"] = view_lines(page, "edit-diff")
        page.keyboard.press("k")
        seen["after_k"] = (selected(), page.inner_text("#verdict"), page.inner_text("#edit-title"))
        page.keyboard.press("n")
        seen["after_n"] = selected()
        page.keyboard.press("n")
        seen["after_n_n"] = (selected(), page.inner_text("#old-diff"), page.inner_text("#edit-diff"))
        page.check("#opt-hide")
        seen["hidden"] = page.evaluate("[...document.querySelectorAll('#seq tbody tr[data-k]')].map(t => t.hidden)")
        page.uncheck("#opt-hide")
        seen["frontend"] = [line["cls"] for line in view_lines(page, "initial-diff")]
        page.check("#opt-ws")
        seen["frontend_ws"] = [(line["cls"], line["text"]) for line in view_lines(page, "initial-diff")]
        page.uncheck("#opt-wrap")
        seen["nowrap"] = page.evaluate("document.body.classList.contains('nowrap')")
        for ref in ("#pass=P0", "#pos=2", "#pass=%"):
            page.goto("about:blank")
            page.goto(path.as_uri() + ref)
            seen[ref] = selected()
    assert errors == []
    assert seen["opened"][:2] == ("1", "#pass=P1") and seen["opened"][2].startswith("the edits differ")
    assert seen["titles"][0].startswith("0.1.14: P1 step 1") and seen["titles"][1].startswith("0.1.15: P1 step 1")
    edit = seen["edit"]
    assert [line["cls"] for line in edit] == [
        "line-same",
        "line-same",
        "line-hunk",
        "line-same",
        "line-same",
        "line-old-only",
        "line-new-only",
    ]
    assert edit[2]["text"] == "@@ 6 lines both edits share @@" and edit[0]["gutter"] == "both"
    assert (edit[5]["gutter"], edit[5]["words"], edit[6]["gutter"], edit[6]["words"]) == (
        "0.1.14",
        ["b"],
        "0.1.15",
        ["c"],
    )
    assert seen["after_k"][0] == "0" and seen["after_k"][1].startswith("the same edit in both releases")
    assert seen["after_k"][2] == "the two edits, line by line: the same"
    assert seen["after_n"] == "1"
    assert seen["after_n_n"] == (
        "2",
        "no run of this pass in 0.1.14",
        "only 0.1.15 runs this pass: its edit above is the whole difference",
    )
    assert seen["hidden"] == [True, False, False]
    assert seen["frontend"] == ["line-same", "line-deleted", "line-added", "line-same", "line-added"]
    assert seen["frontend_ws"] == [
        ("line-same", " def f():"),
        ("line-space", "~    x = 1"),
        ("line-same", "   y = 2"),
        ("line-added", "+  w = 3"),
    ]
    assert seen["nowrap"] is True
    assert (seen["#pass=P0"], seen["#pos=2"], seen["#pass=%"]) == ("0", "2", "1")  # a bad one: the first edit


def row_cells(index: str, column: int | None = None):
    """The first row's cells of the index's table as text (one cell, by column)."""
    row = re.search(r'<table id="pairs">.*?<tbody>\s*<tr[^>]*>(.*?)</tr>', index, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", " ", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    return cells if column is None else cells[column]


@pytest.mark.slow  # a browser
def test_the_index_says_where_each_pair_differs_and_its_filter_finds_the_kernel_in_chromium(tmp_path):
    index, _ = pair_outputs(tmp_path)
    (summary,) = re.findall(r"<td class=\"wrap\"><b>(.*?)</b>", index)
    with chromium_page({"width": 1000, "height": 700}) as (page, errors):
        page.goto((tmp_path / "index.html").as_uri())
        row = page.locator("#pairs tbody tr").first
        shown = row.inner_text()
        label = row.locator("td").nth(1).inner_text()
        found = {}
        queries = (CONFIG["kernel"], "no-such-kernel", CONFIG["kernel"] + " 0.1.15", "P1 " + CONFIG["kernel"], "Q9")
        for query in queries:
            page.fill("#filter", query)
            found[query] = row.is_visible()
    assert errors == []
    assert summary in shown and summary.startswith("differs from the frontend")
    assert label.split()[:2] == [CONFIG["target_name"], CONFIG["kernel"]]  # the label names the kernel
    # every column is searched: P1, the pass 0.1.15 adds, is named in the difference column only
    assert "P1" in row_cells(index, 3) and not any("P1" in cell for k, cell in enumerate(row_cells(index)) if k != 3)
    assert found == dict(zip(queries, (True, False, True, True, False)))


def test_the_index_marks_which_pass_does_what_and_links_every_table_and_figure(tmp_path):
    index, _ = pair_outputs(tmp_path)
    old = job_rows("0.1.14", [run("P0"), run("P2")])
    new = job_rows("0.1.15", [run("P0"), run("P1", added=2, deleted=1), run("P2")])
    # the marks are the alignment's own differences, the strongest per pass name
    archives = {cr.job_key(old[0]): tmp_path / "o.gz", cr.job_key(new[0]): tmp_path / "n.gz"}
    alignment = cr.pass_alignment(frame(old, new), archives)
    expected = {}
    for _, row in alignment.iterrows():
        name = row["pass_old"] if isinstance(row["pass_old"], str) else row["pass_new"]
        if row["difference"] in compare_pages.MARKS and row["difference"] != cr.CARRIED:
            expected[name] = compare_pages.MARKS[row["difference"]]
    matrix = re.search(r'<table id="matrix">(.*?)</table>', index, re.S).group(1)
    shown = dict(re.findall(r"<tr><th>(\w+)</th><td[^>]*>([^<]*)</td></tr>", matrix))
    assert shown == expected and expected  # P1, run by 0.1.15 alone, edits the already differing IR
    for name in compare_pages.FIGURES:
        assert f'<a href="{name}">{name}</a>' in index
    tables = ["churn_by_version.csv", "divergence.csv"]
    linked = compare_pages.index_page([], None, tables)
    assert all(f'<a href="{name}">{name}</a>' in linked for name in tables)


# ------------------------------------------------------------------------- reading a real pair's edits


def lcs_length(a: list[str], b: list[str]) -> int:
    """The longest common subsequence of two line lists: the reference the page's own diff must reach."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def view_lines(page, ident: str) -> list[dict]:
    """The lines a diff view shows: class, gutter, text, highlighted words, and the folded count of a '@@' line."""
    return page.evaluate(
        """id => [...document.getElementById(id).children].map(s => ({
            cls: s.className, gutter: s.querySelector('b.gutter') ? s.querySelector('b.gutter').textContent : '',
            text: s.textContent, words: [...s.querySelectorAll('em')].map(e => e.textContent)}))""",
        ident,
    )


def no_horizontal_scroll(page, ident: str) -> dict:
    """Whether the view scrolls sideways and whether each highlighted word lies inside its visible width."""
    return page.evaluate(
        """id => {const pre = document.getElementById(id), box = pre.getBoundingClientRect();
            const ems = [...pre.querySelectorAll('em')].map(e => e.getBoundingClientRect());
            return {scrolls: pre.scrollWidth > pre.clientWidth + 1, words: ems.length,
                    outside: ems.filter(r => r.left < box.left - 1 || r.right > box.right + 1).length};}""",
        ident,
    )


def check_reading_views(compare_dir: Path, expected: dict, shots: Path) -> dict:
    """Drive the real pair page of ``expected`` (a divergence.csv row of an instrument pair) at 1000 and 1400 px:
    the third view, the toggles, the keys, the whitespace-insensitive frontend diff and the copied finding;
    returns what each showed, with the pair's pass_alignment.csv rows."""
    import pandas as pd

    alignment = pd.read_csv(compare_dir / "pass_alignment.csv", keep_default_na=False)
    name = page_templates.page_name(
        f"{expected['configuration']}__{expected['release_old']}__{expected['release_new']}"
    )
    seen: dict = {}
    for width in (1000, 1400):
        with chromium_page({"width": width, "height": 900}) as (page, errors):
            page.goto((compare_dir / "index.html").as_uri())
            row = page.locator("#pairs tbody tr", has=page.locator(f'a[href="pages/{name}.html"]'))
            seen["index_difference"] = row.locator("td").nth(3).inner_text()
            # the filter: the kernel, the newer release and the pass where the IR reconverges find the row
            queries = {
                f"{expected['kernel']} {expected['release_new']} {expected['reconverges_at']}": True,
                f"{expected['kernel']} no-such-pass": False,
            }
            seen["filter"] = {}
            for query in queries:
                page.fill("#filter", query)
                seen["filter"][query] = row.is_visible()
            seen["filter_expected"] = queries
            page.fill("#filter", "")
            row.locator("a").click()
            page.wait_for_load_state("load")
            label = page.evaluate("JSON.parse(document.getElementById('data').textContent).label")
            data = page.evaluate("JSON.parse(document.getElementById('data').textContent)")
            mine = alignment[
                (alignment["configuration"] == expected["configuration"])
                & (alignment["release_old"] == expected["release_old"])
                & (alignment["release_new"] == expected["release_new"])
            ].sort_values("position")
            assert len(mine) == len(data["rows"]), (len(mine), len(data["rows"]))
            # the first pass whose two runs both change the IR and edit differently
            both = [
                k
                for k, r in enumerate(data["rows"])
                if r["same"] is False and (r["old"] or {}).get("diff") and (r["new"] or {}).get("diff")
            ]
            assert both, "no pass whose two runs both change the IR and edit differently"
            chosen = both[0]
            page.locator(f'#seq tbody tr[data-k="{chosen}"]').click()
            lines = view_lines(page, "edit-diff")
            layout = page.evaluate(
                """() => ['old-diff','new-diff','edit-diff'].map(id =>
                    document.getElementById(id).getBoundingClientRect().left)"""
            )
            seen[width] = {
                "links": {side: page.get_attribute(f"#{side}-src", "href") for side in ("old", "new")},
                "label": label,
                "lines": lines,
                "scroll": no_horizontal_scroll(page, "edit-diff"),
                "stacked": layout[0] == layout[1],
                "errors": errors,
            }
            page.screenshot(path=str(shots / f"pair_{width}.png"), full_page=True)
            if width == 1400:
                continue
            # the same partition of both edits' changed lines as the page's data holds, line for line
            changes = {
                side: [
                    ("+" if v & 3 == 1 else "-") + data["lines"][v >> 2]
                    for v in data["rows"][chosen][side]["diff"]
                    if v & 3 in (1, 2)
                ]
                for side in ("old", "new")
            }
            seen["changes"] = changes
            seen["alignment"] = mine.to_dict("records")
            seen["marks"] = page.evaluate(
                "[...document.querySelectorAll('#seq tbody tr[data-k] td.mark')].map(t => t.textContent)"
            )
            # keys: n goes to the next pass whose edits differ (or that one release alone runs), p back
            page.locator('#seq tbody tr[data-k="0"]').click()
            page.keyboard.press("n")
            seen["after_n"] = page.evaluate("document.querySelector('#seq tbody tr.selected').dataset.k")
            page.keyboard.press("j")
            seen["after_j"] = page.evaluate("document.querySelector('#seq tbody tr.selected').dataset.k")
            page.keyboard.press("p")
            seen["after_p"] = page.evaluate("document.querySelector('#seq tbody tr.selected').dataset.k")
            # hide passes that edit alike
            page.check("#opt-hide")
            seen["visible"] = page.evaluate(
                "[...document.querySelectorAll('#seq tbody tr[data-k]')].filter(t => !t.hidden).map(t => +t.dataset.k)"
            )
            page.uncheck("#opt-hide")
            # the frontend's IR, with and without whitespace
            seen["initial"] = {"exact": view_lines(page, "initial-diff")}
            page.check("#opt-ws")
            seen["initial"]["ws"] = view_lines(page, "initial-diff")
            page.uncheck("#opt-ws")
            page.uncheck("#opt-wrap")
            seen["nowrap_scrolls"] = no_horizontal_scroll(page, "edit-diff")["scrolls"]
            page.check("#opt-wrap")
            # copy finding, and its permalink opens on the same pass
            page.locator(f'#seq tbody tr[data-k="{chosen}"]').click()
            page.click("#copy")
            seen["finding"] = page.input_value("#finding")
            seen["data"] = data
            seen["chosen"] = chosen
            link = re.search(r"^(file://\S+#pass=\S+)$", seen["finding"], re.M).group(1)
            page.goto("about:blank")
            page.goto(link)
            seen["permalink_selects"] = page.evaluate("document.querySelector('#seq tbody tr.selected').dataset.k")
            # a malformed permalink (#pass=%: an escape that does not decode) opens the page as one without a pass
            # named: a pass chosen, its panes drawn, no URIError (the errors list is asserted empty)
            page.goto("about:blank")
            page.goto(link.split("#")[0] + "#pass=%")
            seen["malformed_selects"] = page.evaluate(
                "document.querySelector('#seq tbody tr.selected')?.dataset.k ?? null"
            )
            seen["malformed_panes"] = page.evaluate("document.getElementById('edit-diff').textContent.trim().length")
            seen["errors"] = errors
    return seen


def assert_pass_link(url: str, name: str, release: str, source) -> None:
    """A pass's link names the release's tag and the file and line of its factory in ``source`` (a
    tilelang_source.SourceTree of that release), or, where TileLang's own tree has none, a search for it."""
    found = re.fullmatch(rf"https://github\.com/tile-ai/tilelang/blob/v{re.escape(release)}/(.+)#L(\d+)", url)
    if found is None:
        assert url == f"https://github.com/search?q=repo%3Atile-ai%2Ftilelang+{name}&type=code", url
        return
    text = source.read(found.group(1))
    assert text is not None, url
    assert text.splitlines()[int(found.group(2)) - 1].startswith(f"def {name}("), url


def assert_reading_views(seen: dict, expected: dict, sources: dict | None = None) -> None:
    """What check_reading_views saw, against the run's own tables and a reference LCS of the page's lines;
    ``sources``: {release: its TileLang source}, against which the pass links are checked."""
    assert expected["difference_summary"] and expected["difference_summary"] in seen["index_difference"]
    if expected["reconverges_at"]:
        assert f"reconverges at {expected['reconverges_at']}" in seen["index_difference"]
    assert seen["filter"] == seen["filter_expected"]
    old, new = str(expected["release_old"]), str(expected["release_new"])
    for width in (1000, 1400):
        shown = seen[width]
        assert shown["errors"] == [], shown["errors"]
        assert shown["label"].split()[:2] == [expected["target_name"], expected["kernel"]]
        # the differing words are highlighted, and all of them lie inside the view: nothing to scroll sideways
        assert shown["scroll"] == {"scrolls": False, "words": shown["scroll"]["words"], "outside": 0}
        assert shown["scroll"]["words"] > 0
        assert shown["stacked"] is (width == 1000)  # at 1000 px the two releases' panes stack
    # the third view partitions both edits' changed lines into shared (a longest common run) and each one's own
    lines = seen[1000]["lines"]
    fold = r"@@ (\d+) lines both edits share @@"
    folded = sum(int(re.match(fold, ln["text"]).group(1)) for ln in lines if ln["cls"] == "line-hunk")
    both = sum(ln["cls"] == "line-same" and ln["gutter"] == "both" for ln in lines) + folded
    only_old = sum(ln["cls"] == "line-old-only" and ln["gutter"] == old for ln in lines)
    only_new = sum(ln["cls"] == "line-new-only" and ln["gutter"] == new for ln in lines)
    changes = seen["changes"]
    assert both == lcs_length(changes["old"], changes["new"])
    assert (both + only_old, both + only_new) == (len(changes["old"]), len(changes["new"]))
    assert only_old + only_new > 0
    assert len(lines) == sum(ln["cls"] in ("line-same", "line-old-only", "line-new-only", "line-hunk") for ln in lines)
    # keys and the toggle follow pass_alignment.csv
    rows = seen["alignment"]
    differs = [r["position"] for r in rows if r["edit_same"] == "False" or r["op"] != "kept"]
    first = next(p for p in differs if p > 0)
    assert int(seen["after_n"]) == first and int(seen["after_j"]) == first + 1 and int(seen["after_p"]) == first
    assert seen["marks"] == [
        compare_pages.MARKS.get(r["difference"])
        or ("≠" if r["edit_same"] == "False" else "?" if r["op"] == "kept" and r["edit_same"] == "" else "")
        for r in rows
    ]
    assert seen["visible"] == [r["position"] for r in rows if r["edit_same"] != "True"]
    # the frontend's IR: re-indented lines are no change with whitespace ignored, as a reference LCS counts
    data = seen["data"]
    texts = [[data["lines"][i] for i in data["init"][side]] for side in ("old", "new")]
    squashed = [[" ".join(t.split()) for t in side] for side in texts]

    def counts(view):
        return sum(ln["cls"] == "line-deleted" for ln in view), sum(ln["cls"] == "line-added" for ln in view)

    exact, ws = counts(seen["initial"]["exact"]), counts(seen["initial"]["ws"])
    common, common_ws = lcs_length(*texts), lcs_length(*squashed)
    assert exact == (len(texts[0]) - common, len(texts[1]) - common)
    assert ws == (len(texts[0]) - common_ws, len(texts[1]) - common_ws)
    assert ws < exact and any(ln["cls"] == "line-space" for ln in seen["initial"]["ws"])
    assert seen["nowrap_scrolls"]  # the long lines of IR do scroll once wrapping is off
    # the copied finding names the pass and both releases, holds both edits, and its permalink opens on the pass
    chosen = data["rows"][seen["chosen"]]
    finding = seen["finding"]
    assert chosen["new"]["pass"] in finding and f"{old} → {new}" in finding and finding.count("```diff") == 2
    assert all(change[1:] in finding for change in changes["old"] + changes["new"])
    assert int(seen["permalink_selects"]) == seen["chosen"]
    assert seen["malformed_selects"] is not None and seen["malformed_panes"] > 0
    for side, release in (("old", old), ("new", new)):
        url = seen[1000]["links"][side]
        assert url and url == seen[1400]["links"][side]
        if sources is not None:
            assert_pass_link(url, chosen[side]["pass"], release, sources[release])


@pytest.mark.slow  # a browser
def test_the_speed_section_of_the_recorded_h200_run_fits_1000_px(tmp_path):
    """The index's "Speed between releases" from the H200's speed_attribution.csv (tests/data/gpu): its long
    notes and labels wrap, so a 1000-px window does not scroll sideways."""
    from tilelang_churn.tables import speed_attribution

    rows = speed_attribution.read_csv(Path(__file__).parent / "data" / "gpu" / "speed_attribution_h200.csv")
    assert rows and all(row["note"] for row in rows)
    (tmp_path / "index.html").write_text(compare_pages.index_page([], rows, []))
    with chromium_page({"width": 1000, "height": 800}) as (page, errors):
        page.goto((tmp_path / "index.html").as_uri())
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        text = page.inner_text("#speed")
    assert errors == [] and widths[0] <= widths[1], widths
    assert all(row["kernel_label"].split("(")[0] in text for row in rows)


def test_a_label_names_its_kernel_once_and_a_long_pass_list_is_shortened_but_still_found():
    assert compare_pages.display_label(
        {"configuration": "cuda-sm80 rmsnorm(N=1152) instrument", "kernel": "rmsnorm"}
    ) == ("cuda-sm80 rmsnorm(N=1152) instrument")
    assert compare_pages.display_label({"configuration": LABEL, "kernel": "gemm"}).startswith("cuda-sm90 gemm 1024x")
    names = [f"Pass{k}" for k in range(9)]
    row = {"difference_summary": "differs from Pass0; never reconverges", "edits_differ_at": ";".join(names)}
    cell = page_templates.TEMPLATES.get_template("compare_macros.html.j2").module.difference_cell(
        compare_pages._difference(row)
    )
    shown = re.sub(r"<[^>]+>", "", cell)
    assert "Pass5" in shown and "Pass6" not in shown and "and 3 more" in shown
    assert all(name in cell for name in names)  # the tooltip names them all
    entry = {**row, "configuration": LABEL, "kernel": "gemm", "release_old": "0.1.14", "release_new": "0.1.15"}
    entry.update(href="pages/x.html", kept_runs=1, removed_runs=0, added_runs=0)
    index = compare_pages.index_page([entry])
    assert re.search(r'data-search="[^"]*Pass8', index)  # the filter finds the passes the cell leaves out
