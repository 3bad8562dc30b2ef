"""One command run and measured on its own: wall time, CPU seconds and peak RSS of that command alone.

``resource.getrusage(RUSAGE_CHILDREN)`` sums every child the benchmark process has waited for, and its
``ru_maxrss`` is the largest of them all, so a benchmark run after a bigger one would report the bigger one's
peak. ``os.wait4`` gives the usage of one child: its own and that of the processes it waited for (Snakemake's
jobs, a trace script's forked children).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import time


@dataclasses.dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    cpu_seconds: float  # user + system, of the command and every process it waited for
    peak_rss_mib: float  # the largest of those processes


def run(command: list[str], **popen_kwargs) -> Measured:
    """Run COMMAND to its end (output captured as text) and measure it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, **popen_kwargs)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Measured(
            returncode=process.returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
            wall_seconds=wall,
            cpu_seconds=usage.ru_utime + usage.ru_stime,
            peak_rss_mib=usage.ru_maxrss / 1024,  # KiB on Linux
        )
