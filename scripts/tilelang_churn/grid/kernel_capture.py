"""``scripts/capture_kernels.py --out FILE -- COMMAND``: the user's program run once, unchanged, with the capture's
hook (kernel/capture_hook.py), and every kernel it asked TileLang to build written to FILE as a ``kernels:`` entry.

The program runs with its own interpreter, working directory, standard streams and arguments; the capture puts a
folder holding its ``sitecustomize.py`` first on ``PYTHONPATH`` and names a record file in the environment, so every
Python process of the program (its subprocesses too) appends its kernels there. The program runs in a process
group of its own (given the terminal when it has one); an interrupt is passed on to it, and what it left running is
killed when it ends.

Then the records are checked (each line, before anything is written), merged per kernel across processes (a
kernel's inputs are those of its first call), checked as the config check would read them (its file and function
at the top level, its parameters taken: kernel/kernels.py's signature), and merged into FILE: an entry FILE already
has (same file, function, parameters with the function's defaults, pass configs) is kept as it is, a new one
appended with a name of its own. FILE is read and checked before the program starts, and written atomically; a
comment at its top says which programs were captured, when. What cannot be replayed (a kernel defined inside a
function, an argument that is no data) and how the program ended are lines of the summary on stderr.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tilelang_churn.core import files, interrupt
from tilelang_churn.core.job_spec import canonical
from tilelang_churn.kernel import capture_hook, kernels

PROG = "capture_kernels.py"
HEADER = (
    "# Kernels captured by scripts/capture_kernels.py (tilelang-churn), one entry per kernel the program asked\n"
    "# TileLang to build; trace them with: snakemake --cores 4 --configfile config/config.yaml THIS_FILE\n"
)
KINDS = ("process", "kernel", "call", "ended", "hook")
NAME_VALUES = 3  # an entry's name: its function and the values of this many of the parameters it sets
AUTOTUNED = "the first config of its @autotune search space (no GPU to tune on)"


class CaptureError(ValueError):
    """Bad input (FILE, the record file) or a command that cannot start: one line naming the file and the value."""


@dataclass
class Kernel:
    """One distinct kernel of the records: its kernel record, how often processes asked for it, its first call's
    inputs."""

    record: dict
    processes: set = field(default_factory=set)
    inputs: dict | None = None


# ------------------------------------------------------------------------------------------------- the command


def capture(out: Path, command: list[str], cuda_on_cpu: bool = False) -> int:
    """Run COMMAND with the hook, merge its kernels into OUT; the exit status (see docs/own-kernel.md).
    cuda_on_cpu: without a GPU, torch's cuda device stands in for the CPU (capture_hook._cuda_on_cpu)."""
    try:
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
            env = capture_env(Path(folder), records_path, cuda_on_cpu)
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
    summary = Summary(out, records, status, stopped, cuda_on_cpu)
    found = distinct_kernels(records)
    entries, problems = entries_of(found, existing)
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


def capture_env(folder: Path, records: Path, cuda_on_cpu: bool = False) -> dict:
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
    if cuda_on_cpu:
        env[capture_hook.CUDA_ON_CPU_ENV] = "1"
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


# ------------------------------------------------------------------------------------------------- the records

# a kernel record's fields and their types (None allowed where listed)
KERNEL_FIELDS = {
    "pid": (int,), "key": (str,), "file": (str, type(None)), "function": (str, type(None)),
    "qualname": (str, type(None)), "style": (str,), "params": (dict,), "problems": (list,),
    "pass_configs": (dict,), "own_pass_configs": (dict,), "out_idx": (list, type(None)),
    "target": (str, dict, type(None)), "where": (str, type(None)), "autotune": (bool,),
    "inputs": (dict, type(None)),
}  # fmt: skip
OTHER_FIELDS = {
    "process": {"pid": (int,), "gpu": (bool,), "argv": (list,)},
    "call": {"pid": (int,), "key": (str,), "inputs": (dict,)},
    "ended": {"pid": (int,), "error": (str,), "text": (str,), "frames": (list,)},
    "hook": {"pid": (int,), "error": (str,)},
}


def read_records(path: Path) -> list[dict]:
    """The record file's records, each checked; a CaptureError naming the file, the line and what is wrong."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise CaptureError(f"{path}, line {number}: not a JSON record ({exc}): {line[:80]!r}") from None
            problem = record_problem(record)
            if problem:
                raise CaptureError(f"{path}, line {number}: {problem}")
            records.append(record)
    return records


def record_problem(record) -> str | None:
    """Why RECORD is no record of the hook's, None when it is one."""
    if not isinstance(record, dict):
        return f"a {type(record).__name__}, not a record"
    kind = record.get("kind")
    if kind not in KINDS:
        return f"its kind is {kind!r}, not one of {', '.join(KINDS)}"
    fields = KERNEL_FIELDS if kind == "kernel" else OTHER_FIELDS[kind]
    for name, types in fields.items():
        if name not in record:
            return f"a {kind} record without {name}"
        if not isinstance(record[name], types) or (types == (int,) and isinstance(record[name], bool)):
            return f"a {kind} record whose {name} is {record[name]!r}"
    if kind == "kernel" and not all(isinstance(problem, str) for problem in record["problems"]):
        return "a kernel record whose problems are not text"
    return None


def distinct_kernels(records: list[dict]) -> list[Kernel]:
    """One Kernel per distinct kernel record (the same key from several processes is one), in the order first
    asked for; its inputs from its first call (or the tensors it was built from)."""
    found: dict[str, Kernel] = {}
    for record in records:
        if record["kind"] == "kernel":
            kernel = found.setdefault(record["key"], Kernel(record))
            kernel.processes.add(record["pid"])
            if kernel.inputs is None and record["inputs"]:
                kernel.inputs = record["inputs"]
        elif record["kind"] == "call" and record["key"] in found:
            kernel = found[record["key"]]
            if kernel.inputs is None or not kernel.record["inputs"]:
                kernel.inputs = kernel.inputs or record["inputs"]
    return list(found.values())


# ------------------------------------------------------------------------------------------------- the entries


def entries_of(found: list[Kernel], existing: list[dict]) -> tuple[list[dict], list[str]]:
    """The new entries of FOUND (those FILE already has left out) and a line per kernel that cannot be replayed."""
    known = {identity for entry in existing if (identity := entry_identity(entry)) is not None}
    names = {entry["name"] for entry in existing}
    entries, problems = [], []
    for kernel in found:
        record = kernel.record
        where = _where(record)
        problem = "; ".join(record["problems"]) or _signature_problem(record)
        if problem:
            problems.append(f"cannot be replayed: {record['function'] or 'a kernel'}{where}: {problem}")
            continue
        signature = kernels.read_signature(record["file"], record["function"])
        defaults = signature.defaults()
        params = signature.ordered(
            {k: v for k, v in record["params"].items() if not kernels.same_value(defaults.get(k, kernels.REQUIRED), v)}
        )
        configs = record["pass_configs"] if record["pass_configs"] != record["own_pass_configs"] else {}
        identity = _identity(record["file"], record["function"], {**defaults, **params}, configs)
        if identity in known:
            continue
        known.add(identity)
        name = _name(record, params, names)
        names.add(name)
        entry = {"name": name, "file": str(Path(record["file"]).resolve()), "function": record["function"],
                 "params": [params], "folders": [name]}  # fmt: skip
        if configs:
            entry["pass_configs"] = [configs]
        entry["captured"] = _captured(kernel, signature)
        entries.append(entry)
    return entries, problems


def _where(record: dict) -> str:
    file = record["file"]
    shown = f" in {_shown_path(file)}" if file else ""
    asked = record["where"]
    if asked:
        path, _, line = asked.rpartition(":")
        shown += f" (asked for at {_shown_path(path)}, line {line})"
    return shown


def _shown_path(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def _signature_problem(record: dict) -> str | None:
    """Why the config could not name the kernel the way the program built it: its file or function not readable
    at the top level, a style the source does not have, a parameter its signature does not take."""
    try:
        signature = kernels.read_signature(record["file"], record["function"])
    except kernels.KernelError as error:
        return str(error).replace(f"{record['file']}: ", "")
    if record["style"] == "prim_func" and signature.style != "prim_func":
        return f"{record['function']} at the top level of its file is no T.prim_func (it is bound to another object)"
    if record["style"] != "prim_func" and signature.style == "prim_func":
        return f"{record['function']} at the top level of its file is a T.prim_func, not the function that built it"
    return signature.problem(record["params"])


def _identity(file: str, function: str, params: dict, configs: dict) -> str:
    return canonical([str(Path(file).resolve()), function, params, configs])


def entry_identity(entry: dict) -> str | None:
    """An entry of FILE as a kernel (its file, function, one parameter set and pass-config set, the function's
    defaults filled in), None for an entry of another shape (several functions or sets: kept, never matched)."""
    file, function, params = entry.get("file"), entry.get("function"), entry.get("params")
    sets = entry.get("pass_configs") or [{}]
    if not (isinstance(file, str) and isinstance(function, str) and isinstance(params, list) and len(params) == 1):
        return None
    if not (isinstance(params[0], dict) and len(sets) == 1 and isinstance(sets[0], dict)):
        return None
    try:
        defaults = kernels.read_signature(file, function).defaults()
    except kernels.KernelError:
        return None
    return _identity(file, function, {**defaults, **params[0]}, sets[0])


def _name(record: dict, params: dict, taken: set) -> str:
    """The function and a short label of its arguments, the values of its first NAME_VALUES parameters away from
    its defaults (``matmul_1024_1024_1024``), reduced to the characters a folder name allows; a hash of the file,
    the function and all its parameters after it where another kernel has that name."""
    values = [re.sub(r"[^A-Za-z0-9_.+-]", "", str(value))[:16] for value in params.values()][:NAME_VALUES]
    base = "_".join([record["function"], *[value for value in values if value]])
    if base not in taken:
        return base
    digest = hashlib.sha256(canonical([record["file"], record["function"], params]).encode()).hexdigest()[:8]
    name, number = f"{base}_{digest}", 2
    while name in taken:
        name, number = f"{base}_{digest}-{number}", number + 1
    return name


def _captured(kernel: Kernel, signature) -> dict:
    """What the capture saw beside the config: where the program asked for it, the target it named, its outputs,
    the pass configs it brought itself (its decorator's, T.annotate_pass_configs), the shapes and dtypes of its
    first call's inputs."""
    record = kernel.record
    found = {"where": record["where"], "style": record["style"]}
    if record["target"] is not None:
        found["target"] = record["target"]
    if record["out_idx"] is not None:
        found["out_idx"] = record["out_idx"]
    if record["own_pass_configs"]:
        found["pass_configs"] = record["own_pass_configs"]
    if kernel.inputs:
        found["inputs"] = kernel.inputs
    if record["autotune"]:
        found["autotune"] = AUTOTUNED
    return found


# ------------------------------------------------------------------------------------------------- the summary


class Summary:
    """What the capture says on stderr at its end, and its exit status."""

    def __init__(self, out: Path, records: list[dict], status: int, stopped: int | None, cuda_on_cpu: bool):
        self.out, self.records, self.status, self.stopped = out, records, status, stopped
        self.cuda_on_cpu = cuda_on_cpu
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
        where = f" at {_shown_path(own[-1][0])}, line {own[-1][1]}" if own else ""
        files_ = [frame[0] for frame in record["frames"] if isinstance(frame, list) and frame]
        stops = not gpu and kernels.needs_gpu(f"{record['error']} {record['text']}", files_)
        cause = "it needs a GPU, which this machine lacks" if stops else "it raised"
        hint = ""
        if stops and not self.cuda_on_cpu and "not compiled with CUDA" in record["error"]:
            hint = " (--cuda-on-cpu keeps the tensors it puts on cuda on the CPU)"
        elif not stops and not gpu and record["error"].startswith("AssertionError"):
            hint = " (without a GPU its kernels' outputs are zeros: a check of them fails)"
        said = f"the program stopped{where}: {cause} ({record['error']}){hint}"
        return (f"{said}; {self.out} keeps what was recorded" if found else said), stops


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("s") else "s")
