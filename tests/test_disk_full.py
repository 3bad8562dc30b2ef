"""A disk that fills up while the tables and figures are written: one line naming the file and "no space left"
(exit 1, no traceback), and no temporary of files.atomic_file left behind.

The disk is real: a 200 KiB tmpfs mounted for each test (needs root; skipped otherwise), filled to the last
byte or to a given room before the writer runs.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_passes
from test_book_figures import REFERENCE_PASSES, job, tables
from tilelang_churn.core import files
from tilelang_churn.core import passes_table as pt

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture
def disk(tmp_path):
    """A folder on its own 200 KiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    folder = tmp_path / "disk"
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(folder)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def fill(folder: Path, room: int = 0) -> None:
    """Write a filler file until the disk is full, then free ``room`` bytes of it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    if room:
        os.truncate(filler, max(0, filler.stat().st_size - room))


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPTS / script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def assert_one_line_naming_a_file_in(proc: subprocess.CompletedProcess, folder: Path, names) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "no space left on device" in proc.stderr
    named = proc.stderr.split("cannot write ", 1)[1].split(": no space left")[0]
    assert Path(named).parent == folder and Path(named).name in names, proc.stderr
    return Path(named).name


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp"))


@pytest.mark.parametrize("room_kib", [0, 60])  # full from the start, or full after the first figure or two
def test_the_book_figures_on_a_full_disk_stop_with_one_line(tmp_path, disk, room_kib):
    churn, ref = tables(tmp_path)
    out = disk / "book"
    out.mkdir()
    fill(disk, room_kib * 1024)
    proc = run("book_figures.py", "--churn", str(churn), "--reference", str(ref), "--out-dir", str(out))
    names = {f"{stem}.{ext}" for stem in ("fig1_reference_passes", "fig2_pass_heatmap", "fig4_variants")
             for ext in ("png", "svg", "pdf")} | {"FIGURES.md"}  # fmt: skip
    failed = assert_one_line_naming_a_file_in(proc, out, names)
    assert not (out / failed).exists() and not leftovers(disk)
    if room_kib == 0:
        assert failed == "fig1_reference_passes.png" and not list(out.iterdir())


def test_the_tables_on_a_full_disk_stop_with_one_line_and_no_temporary(tmp_path, disk):
    passes = [
        write_passes(tmp_path, name, job(REFERENCE_PASSES, M=m, N=m, K=m)) for name, m in (("a", 256), ("b", 200))
    ]
    fill(disk)
    with pytest.raises(files.WriteError) as caught:  # the one writer of passes.csv
        pt.write_rows(disk / "job" / "passes.csv", pt.read_rows(passes[0]))
    assert str(caught.value) == f"cannot write {disk / 'job' / 'passes.csv'}: no space left on device"
    assert not (disk / "job" / "passes.csv").exists() and not leftovers(disk)
    out = disk / "results"
    args = ["--out", str(out / "churn.csv"), "--summary", str(out / "churn_summary.csv"), *map(str, passes)]
    proc = run("churn_table.py", *args)
    assert assert_one_line_naming_a_file_in(proc, out, {"churn.csv"}) == "churn.csv"
    assert not list(out.iterdir()) and not leftovers(disk)


def test_the_heatmap_on_a_full_disk_stops_with_one_line(tmp_path, disk):
    churn, _ = tables(tmp_path)
    fill(disk)
    proc = run(
        "plot_churn.py", "heatmap", "--churn", str(churn), "--out", str(disk / "heat.png"), str(disk / "heat.svg")
    )
    assert assert_one_line_naming_a_file_in(proc, disk, {"heat.png"}) == "heat.png"
    assert not leftovers(disk) and sorted(p.name for p in disk.iterdir()) == ["filler"]


@pytest.mark.integration
def test_a_trace_batch_on_a_full_disk_says_no_space_left_not_that_the_kernel_failed(disk):
    """Round four: with the results' file system full, a job's failure was blamed on the kernel ("the kernel's code
    ended the process ... os._exit") and the batch tried to write its failed row there too. Each job's line says
    no space is left there, and none claims the kernel failed."""
    from conftest import require_tilelang
    from tilelang_churn.trace import trace_cli

    require_tilelang()
    fill(disk)
    names = ("a", "instrument"), ("b", "trace-env")
    jobs = [
        {"args": ["--mode", mode, "--target", "cuda-sm90", "--shape", "256,256,256", "--out", str(disk / name)],
         "log": str(disk / f"{name}.log")}
        for name, mode in names
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "trace_batch.py"), "--jobs", "-", "--workers", "1"],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == trace_cli.EXIT_NOT_RECORDED
    for number, (name, _) in enumerate(names, 1):
        assert f"error: job {number} of 2: no space left on the file system of {disk / name}" in proc.stderr
    assert "the kernel's code" not in proc.stderr and "Traceback" not in proc.stderr
