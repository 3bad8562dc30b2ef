"""Every entry file a rule runs, stopped by Ctrl-C or SIGTERM: one line naming the script and the signal, exit
128 + the signal, no traceback, nothing half-written (core/interrupt.py's ``run``, compare_releases' way; its own
tests: test_compare_signals.py). A Ctrl-C reaches the whole process group: a pool's workers too.

Each run is stopped mid-work, for real: one of its inputs is a named pipe, and the signal goes once the script has
opened it (the test's end opens then) and waits to read it."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, SCRIPTS
from test_book_figures import tables
from test_plot_churn import job_rows, write

RULES = REPO / "workflow" / "rules"


def rule_entries() -> set[str]:
    """The entry files the rules run: a `script:` path (../../scripts/NAME.py) or a script param ({SCRIPTS}/NAME.py)."""
    text = "".join(path.read_text(encoding="utf-8") for path in RULES.glob("*.smk"))
    return set(re.findall(r"(?:\.\./\.\./scripts/|\{SCRIPTS\}/)(\w+)\.py", text))


def test_every_entry_a_rule_runs_stops_in_one_line_with_its_slow_imports_under_the_guard():
    """Its __main__ block is ``interrupt.run(NAME, ...)`` and it imports nothing but core (standard library only) before
    it: pandas, matplotlib and TileLang load inside the command, so a signal during the imports is one line too."""
    entries = rule_entries()
    assert {"plot_churn", "book_figures", "churn_table", "trace_batch", "compare_releases", "gpu_bench"} <= entries
    problems = []
    for name in sorted(entries):
        tree = ast.parse((SCRIPTS / f"{name}.py").read_text(encoding="utf-8"))
        (block,) = [node for node in tree.body if isinstance(node, ast.If)]  # if __name__ == "__main__":
        call = block.body[0].value if len(block.body) == 1 and isinstance(block.body[0], ast.Expr) else None
        if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "interrupt.run"):
            problems.append(f"{name}.py: its __main__ block is not one interrupt.run(...)")
        elif ast.literal_eval(call.args[0]) != name:
            problems.append(f"{name}.py: interrupt.run names it {ast.unparse(call.args[0])}")
        slow = [
            node.module
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("tilelang_churn")
            and node.module != "tilelang_churn.core"
        ]
        problems += [f"{name}.py: imports {module} before the guard" for module in slow]
    assert not problems, "\n".join(problems)


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a pytest-xdist worker may ignore SIGINT, and children inherit that


def _writer(fifo: Path) -> int | None:
    """The pipe's writing end, once the script has opened it to read (None before)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return None


def stopped_while_reading(argv: list[str], fifo: Path, number: int) -> subprocess.CompletedProcess:
    """SCRIPTS/ARGV run until it reads FIFO, then NUMBER sent to its process group, as a terminal's Ctrl-C is."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / argv[0]), *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True, preexec_fn=_default_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    writer = None
    while writer is None and proc.poll() is None and time.monotonic() < deadline:
        writer = _writer(fifo)
        time.sleep(0.005)
    try:
        assert writer is not None, f"{argv[0]} never opened {fifo.name}: {proc.poll()}"
        os.killpg(proc.pid, number)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill() if proc.poll() is None else None
        os.close(writer) if writer is not None else None
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _plot_bars(tmp_path: Path, fifo: Path) -> tuple[list[str], list[Path]]:
    a = write(tmp_path, "a", job_rows(40))
    out = [tmp_path / "out" / "a.png", tmp_path / "out" / "b.png"]
    return ["plot_churn.py", "bars", "--passes", str(a), str(fifo), "--workers", "2", "--out", *map(str, out)], out[1:]


def _plot_heatmap(tmp_path: Path, fifo: Path) -> tuple[list[str], list[Path]]:
    out = [tmp_path / "out" / "heat.png"]
    return ["plot_churn.py", "heatmap", "--churn", str(fifo), "--out", *map(str, out)], out


def _book(tmp_path: Path, fifo: Path) -> tuple[list[str], list[Path]]:
    _, reference = tables(tmp_path)
    out = tmp_path / "out"
    return ["book_figures.py", "--churn", str(fifo), "--reference", str(reference), "--out-dir", str(out)], [out]


def _churn_table(tmp_path: Path, fifo: Path) -> tuple[list[str], list[Path]]:
    a = write(tmp_path, "a", job_rows(40))
    out = [tmp_path / "out" / "churn.csv", tmp_path / "out" / "summary.csv"]
    return ["churn_table.py", "--out", str(out[0]), "--summary", str(out[1]), str(a), str(fifo)], out


def _speed_figures(tmp_path: Path, fifo: Path) -> tuple[list[str], list[Path]]:
    out = tmp_path / "out"
    return ["speed_figures.py", "--joined", str(fifo), "--out-dir", str(out), "--kernels", "gemm"], [out]


def _knockout_table(tmp_path: Path, fifo: Path) -> tuple[list[str], list[Path]]:
    out = [tmp_path / "out" / "knockout.csv"]
    return ["knockout_table.py", "--out", str(out[0]), str(fifo)], out


STOPS = {
    "plot_churn bars, its pool's workers too": (_plot_bars, signal.SIGINT),
    "plot_churn heatmap": (_plot_heatmap, signal.SIGTERM),
    "book_figures": (_book, signal.SIGINT),
    "churn_table": (_churn_table, signal.SIGINT),
    "speed_figures": (_speed_figures, signal.SIGINT),
    "knockout_table": (_knockout_table, signal.SIGTERM),
}


@pytest.mark.parametrize("case", STOPS, ids=[case.split(",")[0].replace(" ", "_") for case in STOPS])
def test_a_script_stopped_mid_work_says_so_in_one_line_and_writes_nothing(tmp_path, case):
    arguments, number = STOPS[case]
    fifo = tmp_path / "input.csv"
    os.mkfifo(fifo)
    argv, outputs = arguments(tmp_path, fifo)
    proc = stopped_while_reading(argv, fifo, number)
    name = argv[0].removesuffix(".py")
    assert (proc.returncode, proc.stderr) == (128 + number, f"{name}: stopped by {number.name}: nothing more written\n")
    assert "Traceback" not in proc.stdout
    assert not [path for path in outputs if path.exists()], "an output of the input it never read was written"
    assert not list(tmp_path.rglob(".*.tmp")), "a temporary was left"


SWALLOWED = """
import gc, sys, weakref
from tilelang_churn.core import interrupt

interrupt.quiet_worker()


class Lock:
    pass


def callback(_):  # as importlib's module-lock callback: a SIGTERM's SystemExit raised here cannot unwind
    raise SystemExit(143)


held = Lock()
ref = weakref.ref(held, callback)
del held
gc.collect()
print("went on after its stop", flush=True)
"""


def test_a_workers_stop_raised_where_python_cannot_unwind_it_still_ends_it_quietly():
    """Seen under make test's load: a plot worker's SIGTERM landed in importlib's module-lock callback; Python
    printed "Exception ignored" with a traceback and the worker went on. The worker now ends there, in silence."""
    proc = subprocess.run([sys.executable, "-c", SWALLOWED], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(SCRIPTS)})  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (143, "", "")
