"""``scripts/capture_kernels.py --out FILE -- COMMAND``: the user's program run once, unchanged, with the capture's
hook (kernel/capture_hook.py), and every kernel it asked TileLang to build written to FILE as a ``kernels:`` entry.

The program runs with its own interpreter, working directory, standard streams and arguments; the capture puts a
folder holding its ``sitecustomize.py`` first on ``PYTHONPATH`` and names a record file in the environment, so every
Python process of the program (its subprocesses too) appends its kernels there. The program runs in a process
group of its own (given the terminal when it has one); an interrupt is passed on to it, and what it left running is
killed when it ends.

Then the records are read (capture_records: checked, merged per kernel, made entries) and merged into FILE: an
entry FILE already has is kept as it is, a new one appended. FILE is read and checked before the program starts,
and written atomically; a comment at its top says which programs were captured, when. What cannot be replayed and
how the program ended are lines of the summary on stderr.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tilelang_churn.core import devices, files, interrupt
from tilelang_churn.grid import capture_records
from tilelang_churn.grid.capture_records import CaptureError, Kernel, distinct_kernels, entries_of, read_records
from tilelang_churn.kernel import capture_hook, kernels

PROG = "capture_kernels.py"
HEADER = (
    "# Kernels captured by scripts/capture_kernels.py (tilelang-churn), one entry per kernel the program asked\n"
    "# TileLang to build; trace them with: snakemake --cores 4 --configfile config/config.yaml THIS_FILE\n"
)


# ------------------------------------------------------------------------------------------------- the command


def capture(out: Path, command: list[str], cuda_on_cpu: bool = False, device=None) -> int:
    """Run COMMAND with the hook, merge its kernels into OUT; the exit status (see docs/own-kernel.md).
    cuda_on_cpu: without a GPU, torch's cuda device stands in for the CPU (capture_hook._cuda_on_cpu). device: a
    device profile's name or mapping (config device): without a GPU, the program's device questions get its
    answers (kernel/device_profiles.py), and each entry written names it."""
    try:
        try:
            entry_device = devices.argument_value(device)  # an entry's ``device``: the name, or the mapping
            profile = devices.read(entry_device)
        except devices.ProfileError as error:
            raise CaptureError(f"--device: {error}") from None
        existing, header = read_config(out)
        check_writable(out)
        if not command:
            raise CaptureError("no command to run: give it after --, e.g. -- python3 model.py")
    except CaptureError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    with tempfile.TemporaryDirectory(prefix="tlchurn-capture-") as folder:
        records_path = Path(folder) / "records.jsonl"
        try:
            env = capture_env(Path(folder), records_path, cuda_on_cpu, profile.to_json() if profile else None)
            status, stopped = run_program(command, env)
        except CaptureError as error:
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return 2
        try:
            records = read_records(records_path)
            existing, header = read_config(out)  # again: what another capture or the user wrote meanwhile stays
        except CaptureError as error:
            kept = out.with_name(out.name + ".records.jsonl")
            try:
                files.write_bytes(kept, records_path.read_bytes())
                where = f"the records are kept in {kept}"
            except OSError:
                where = "nothing was recorded"
            print(f"{PROG}: error: {error}; {where}, {out} is unchanged", file=sys.stderr)
            return 2
    summary = Summary(out, records, status, stopped, cuda_on_cpu, profile is not None)
    found = distinct_kernels(records)
    entries, problems = entries_of(found, existing, entry_device if profile else None)
    summary.problems += problems
    summary.unnamed = len(problems)
    if entries:
        line = f"# {started}: {shlex.join(command)} (in {Path.cwd()})"
        try:
            write_config(out, header + [line], [*existing, *entries])
        except OSError as error:
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return 1
    return summary.report(found, len(entries), len(existing))


def capture_env(folder: Path, records: Path, cuda_on_cpu: bool = False, device: str | None = None) -> dict:
    """The program's environment: the capture's sitecustomize folder first on PYTHONPATH, the record file named."""
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(capture_hook.SITE_TEXT, encoding="utf-8")
    env = dict(os.environ)
    paths = [str(site), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[capture_hook.RECORDS_ENV] = str(records)
    env[capture_hook.HOOK_ENV] = str(Path(capture_hook.__file__).resolve())
    env.pop(capture_hook.CUDA_ON_CPU_ENV, None)
    env.pop(capture_hook.DEVICE_ENV, None)
    if cuda_on_cpu:
        env[capture_hook.CUDA_ON_CPU_ENV] = "1"
    if device:
        env[capture_hook.DEVICE_ENV] = device
    return env


def run_program(command: list[str], env: dict) -> tuple[int, int | None]:
    """COMMAND's exit status (a signal's: negative) and the signal that stopped the capture, if one did. The program
    runs in a process group of its own, in the foreground of the terminal when there is one; SIGINT, SIGTERM and
    SIGHUP are passed on to it, and it gets SIGTERM if the capture itself is killed; whatever it left in its group
    is killed once it has ended."""
    try:
        child = subprocess.Popen(command, env=env, process_group=0, preexec_fn=interrupt.die_with_parent)
    except OSError as exc:
        raise CaptureError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    received: list[int] = []

    def forward(signum, frame):
        received.append(signum)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    terminal = _give_terminal(child.pid)
    try:
        while True:
            try:
                status = child.wait()
                break
            except InterruptedError:
                continue
    finally:
        _take_terminal(terminal)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        if child.returncode is None:
            child.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status, (received[0] if received else None)


def _give_terminal(pgid: int) -> int | None:
    """Make the program's group the terminal's foreground (it reads and is interrupted as without the capture);
    the terminal's descriptor, None when stdin is no terminal or this process is not in its foreground."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
            return None
        with _no_sigttou():
            os.tcsetpgrp(fd, pgid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGCONT)  # had it read the terminal before, it stopped (SIGTTIN)
        return fd
    except (OSError, ValueError, AttributeError):
        return None


def _take_terminal(fd: int | None) -> None:
    if fd is None:
        return
    with contextlib.suppress(OSError), _no_sigttou():
        os.tcsetpgrp(fd, os.getpgrp())


@contextlib.contextmanager
def _no_sigttou():
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGTTOU, previous)


# ------------------------------------------------------------------------------------------------- FILE


def read_config(path: Path) -> tuple[list[dict], list[str]]:
    """FILE's kernel entries and its header comment lines ([] and HEADER's when it does not exist yet); a
    CaptureError naming the file and the key when it is no config file of kernels."""
    import yaml

    if not path.exists():
        return [], HEADER.splitlines()
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except OSError as exc:
        raise CaptureError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f", line {where.line + 1}" if where is not None else ""
        raise CaptureError(f"{path}{line}: not a YAML file ({str(exc).splitlines()[0]})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict) or set(data) - {"kernels"}:
        other = sorted(set(data) - {"kernels"}) if isinstance(data, dict) else None
        what = f"it also sets {', '.join(map(str, other))}" if other else f"it holds a {type(data).__name__}"
        raise CaptureError(f"{path}: not a capture's file of kernels: entries ({what}); give --out a file of its own")
    entries = data.get("kernels") or []
    if not isinstance(entries, list):
        raise CaptureError(f"{path}: kernels is a {type(entries).__name__}, not a list of kernel entries")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise CaptureError(f"{path}: kernels[{i}] is a {type(entry).__name__}, not a kernel entry (a mapping)")
        if not isinstance(entry.get("name"), str):
            raise CaptureError(f"{path}: kernels[{i}].name is {entry.get('name')!r}, not a kernel name")
    header = [line for line in _leading_comments(text)] or HEADER.splitlines()
    return entries, header


def _leading_comments(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def check_writable(path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise CaptureError(f"{path}: its folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise CaptureError(f"{path}: its folder {folder} cannot be written")
    if path.exists() and not path.is_file():
        raise CaptureError(f"{path}: not a file")


def write_config(path: Path, header: list[str], entries: list[dict]) -> None:
    import yaml

    body = yaml.safe_dump({"kernels": entries}, sort_keys=False, default_flow_style=None, width=120)
    with files.atomic_file(path) as handle:
        handle.write("\n".join(header) + "\n" + body)


# ------------------------------------------------------------------------------------------------- the summary


class Summary:
    """What the capture says on stderr at its end, and its exit status."""

    def __init__(
        self, out: Path, records: list[dict], status: int, stopped: int | None, cuda_on_cpu: bool, device: bool = False
    ):
        self.out, self.records, self.status, self.stopped = out, records, status, stopped
        self.cuda_on_cpu = cuda_on_cpu
        self.device = device
        self.problems: list[str] = []
        self.unnamed = 0  # kernels that a config cannot name

    def report(self, found: list[Kernel], new: int, had: int) -> int:
        processes = [r for r in self.records if r["kind"] == "process"]
        gpu = any(r["gpu"] for r in processes)
        for record in self.records:
            if record["kind"] == "hook":
                self.problems.append(f"the hook failed in process {record['pid']}: {record['error']}")
        for problem in self.problems:
            print(f"{PROG}: {problem}", file=sys.stderr)
        ended = [self._ended(r, gpu, bool(found)) for r in self.records if r["kind"] == "ended"]
        for line, _ in ended:
            print(f"{PROG}: {line}", file=sys.stderr)
        kept = len(found) - self.unnamed
        if not found:
            where = "" if processes else " (no process imported TileLang with the hook: -I and -E ignore PYTHONPATH)"
            print(f"{PROG}: no kernel recorded{where}; {self.out} not written", file=sys.stderr)
        else:
            counted = f"{_count(len(found), 'kernel')} recorded ({kept} that a config can name: {new} new in {self.out}"
            print(f"{PROG}: {counted}, {kept - new} it already had; {had + new} entries in it), from "
                  f"{_count(len(processes), 'process')}{'' if gpu else ' without a GPU (stand-in kernels)'}",
                  file=sys.stderr)  # fmt: skip
        kept_there = f"the kernels recorded until then are in {self.out}" if found else "nothing was recorded"
        if self.stopped is not None:
            print(f"{PROG}: stopped by {signal.Signals(self.stopped).name}: {kept_there}", file=sys.stderr)
            return 128 + self.stopped
        if self.status < 0:
            killed = signal.Signals(-self.status).name
            memory = " (out of memory?)" if self.status == -signal.SIGKILL else ""
            print(f"{PROG}: the program was killed by {killed}{memory}: {kept_there}", file=sys.stderr)
            return 128 - self.status
        if self.status == 0 or (ended and all(gpu_stop for _, gpu_stop in ended) and not gpu):
            return 0 if found else 1
        return self.status

    def _ended(self, record: dict, gpu: bool, found: bool) -> tuple[str, bool]:
        """One line for a process whose program ended on an exception, and whether it stopped for want of a GPU."""
        own = [frame for frame in record["frames"] if isinstance(frame, list) and len(frame) == 3 and frame[2]]
        where = f" at {capture_records.shown_path(own[-1][0])}, line {own[-1][1]}" if own else ""
        files_ = [frame[0] for frame in record["frames"] if isinstance(frame, list) and frame]
        stops = not gpu and kernels.needs_gpu(f"{record['error']} {record['text']}", files_)
        cause = "it needs a GPU, which this machine lacks" if stops else "it raised"
        hint = ""
        profile = "--device H100 (H200, B200) answers its questions about the GPU as that GPU would"
        if stops and not self.cuda_on_cpu and "not compiled with CUDA" in record["error"]:
            also = "" if self.device else f"; {profile}"
            hint = f" (--cuda-on-cpu keeps the tensors it puts on cuda on the CPU{also})"
        elif stops and not self.device:
            hint = f" ({profile})"
        elif not stops and not gpu and record["error"].startswith("AssertionError"):
            hint = " (without a GPU its kernels' outputs are zeros: a check of them fails)"
        said = f"the program stopped{where}: {cause} ({record['error']}){hint}"
        return (f"{said}; {self.out} keeps what was recorded" if found else said), stops


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("s") else "s")
