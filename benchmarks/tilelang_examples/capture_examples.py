"""TileLang's examples captured from their own __main__ (scripts/capture_kernels.py), against the configs written by
hand in v0.1.13.yaml (issue 26).

    python capture_examples.py capture CONFIG WORKDIR [--cuda-on-cpu]  # each example file, in its own folder
    python capture_examples.py match CONFIG WORKDIR        # N of the configurations captured, each miss and why
    python capture_examples.py rows CONFIG WORKDIR         # both traced by Snakemake; each pair's rows compared

CONFIG's `file:` paths are relative to WORKDIR (put TileLang's examples/ of commit 8001cc4cc at
WORKDIR/tilelang-v0.1.13/examples, README.md). `capture` runs `capture_kernels.py --out WORKDIR/captured.yaml --
python3 EXAMPLE.py` for each example file in the example's own folder, one after the other (so FILE gathers every
program's kernels, as a user appends programs to one file), with its output in WORKDIR/capture-logs/. `match`
compares each configuration of CONFIG with the captured entries: the same file and function and the same
parameters, the function's defaults filled in on both sides and a "T.<name>" compared as the object TileLang
gives for it (T.float is T.float32). A miss's reason is the capture's own summary for that example. `rows` traces
the matched pairs in two separate Snakemake runs (the hand-written entries, then the captured ones; mode
instrument and trace-env, target cuda-sm90) and compares each pair's rows, every column but the kernel's name,
label and timing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "scripts" / "capture_kernels.py"
TIMEOUT_S = 120  # past it the capture is stopped (SIGTERM): a reference computed on the CPU at full size
NAMING = {"kernel", "kernel_label", "seconds", "source", "params"}  # columns that name the entry, or time it


def configurations(config: dict, workdir: Path):
    """(entry name, file resolved, function, params with the entry's defaults) of every parameter set."""
    for entry in config["kernels"]:
        functions = entry["function"] if isinstance(entry["function"], list) else [entry["function"]]
        for function in functions:
            sets = entry["params"].get(function, [{}]) if isinstance(entry["params"], dict) else entry["params"]
            for params in sets:
                name = entry["name"] if len(functions) == 1 else f"{entry['name']}.{function}"
                yield name, (workdir / entry["file"]).resolve(), function, {**entry.get("defaults", {}), **params}


def capture(config_path: str, workdir_path: str, *options: str) -> int:
    config, workdir = yaml.safe_load(Path(config_path).read_text()), Path(workdir_path).resolve()
    out, logs = workdir / "captured.yaml", workdir / "capture-logs"
    out.unlink(missing_ok=True)
    logs.mkdir(exist_ok=True)
    examples = list(dict.fromkeys(file for _, file, _, _ in configurations(config, workdir)))
    times = {}
    for example in examples:
        started = time.monotonic()
        command = [sys.executable, str(CAPTURE), *options, "--out", str(out), "--", sys.executable, example.name]
        log = logs / f"{example.parent.name}__{example.stem}.log"
        with open(log, "w") as handle:  # past TIMEOUT_S the capture is sent SIGTERM: it stops the program, keeps FILE
            proc = subprocess.Popen(command, cwd=example.parent, stdout=handle, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)  # fmt: skip
            try:
                status = proc.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.terminate()
                status = f"timeout ({proc.wait()})"
        times[str(example)] = round(time.monotonic() - started, 2)
        output = log.read_text(errors="replace")
        summary = [line for line in output.splitlines() if line.startswith("capture_kernels.py:")]
        print(f"{example.parent.name}/{example.name}: exit {status}, {times[str(example)]} s", flush=True)
        for line in summary:
            print("   " + line, flush=True)
    (workdir / "capture-times.json").write_text(json.dumps(times, indent=1))
    return 0


def _normalized(value, language):
    if isinstance(value, str) and value.startswith("T."):
        found = language
        for part in value.split(".")[1:]:
            found = getattr(found, part, None)
        return f"T:{found}" if found is not None else value
    if isinstance(value, (list, tuple)):
        return [_normalized(item, language) for item in value]
    return value


def _full(file: Path, function: str, params: dict, language) -> str:
    from tilelang_churn.kernel import kernels

    try:
        defaults = kernels.read_signature(file, function).defaults()
    except kernels.KernelError:
        defaults = {}
    merged = {**defaults, **params}
    return json.dumps({k: _normalized(v, language) for k, v in merged.items()}, sort_keys=True, default=str)


def matches(config_path: str, workdir_path: str) -> tuple[list, list, list]:
    """(hand-written name, captured entry) of each matched configuration, the misses, the captured entries."""
    import tilelang.language as language

    config, workdir = yaml.safe_load(Path(config_path).read_text()), Path(workdir_path).resolve()
    captured = (yaml.safe_load((workdir / "captured.yaml").read_text()) or {}).get("kernels", [])
    found = {}
    for entry in captured:
        file = Path(entry["file"]).resolve()
        found.setdefault((str(file), entry["function"], _full(file, entry["function"], entry["params"][0], language)),
                         entry)  # fmt: skip
    pairs, misses = [], []
    for name, file, function, params in configurations(config, workdir):
        key = (str(file), function, _full(file, function, params, language))
        if key in found:
            pairs.append((name, file, function, params, found[key]))
        else:
            misses.append((name, file, function, params))
    return pairs, misses, captured


def _reason(workdir: Path, file: Path, function: str, params: dict, captured: list) -> str:
    near = [entry for entry in captured if Path(entry["file"]).resolve() == file and entry["function"] == function]
    if near:
        other = {k: v for k, v in near[0]["params"][0].items() if params.get(k) != v}
        return f"captured with other parameters ({json.dumps(other)[:160]})"
    log = workdir / "capture-logs" / f"{file.parent.name}__{file.stem}.log"
    lines = log.read_text().splitlines() if log.exists() else []
    said = [line.removeprefix("capture_kernels.py: ") for line in lines if line.startswith("capture_kernels.py:")]
    said = [line for line in said if "kernels recorded" not in line] or said
    if not said:
        said = [line for line in lines if line.strip()][-1:] or ["no output"]
    return " | ".join(said)[:400]


def match(config_path: str, workdir_path: str) -> int:
    workdir = Path(workdir_path).resolve()
    pairs, misses, captured = matches(config_path, workdir_path)
    total = len(pairs) + len(misses)
    print(f"{len(pairs)} of {total} configurations captured exactly (same file, function and parameters); "
          f"{len(captured)} entries in captured.yaml")  # fmt: skip
    for name, file, function, params in misses:
        print(f"  miss {name} ({function}): {_reason(workdir, file, function, params, captured)}")
    report = {"captured": len(pairs), "of": total, "matched": [name for name, *_ in pairs],
              "misses": {name: _reason(workdir, file, function, params, captured)
                         for name, file, function, params in misses}}  # fmt: skip
    (workdir / "capture-match.json").write_text(json.dumps(report, indent=1))
    return 0


def _run(workdir: Path, name: str, entries: list[dict]) -> Path:
    run = workdir / f"rows-{name}"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(REPO / "config", run / "config")
    (run / "tilelang-v0.1.13").symlink_to(workdir / "tilelang-v0.1.13")
    grid = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["trace-env", "instrument"], "kernels": entries,
            "job_figures": False, "heatmap_formats": ["png"]}  # fmt: skip
    (run / "grid.yaml").write_text(yaml.safe_dump(grid, sort_keys=False))
    snakemake = Path(sys.executable).parent / "snakemake"
    command = [str(snakemake), "-s", str(REPO / "Snakefile"), "--cores", "2", "--keep-going", "--quiet", "rules",
               "--configfile", "config/config.yaml", "grid.yaml"]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(command, cwd=run, capture_output=True, text=True)
    print(f"{name}: snakemake exit {proc.returncode} in {time.monotonic() - started:.0f} s", flush=True)
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
    return run / "results" / "churn.csv"


def rows(config_path: str, workdir_path: str) -> int:
    import pandas as pd

    config, workdir = yaml.safe_load(Path(config_path).read_text()), Path(workdir_path).resolve()
    pairs, _, _ = matches(config_path, workdir_path)
    by_name = {}
    for entry in config["kernels"]:
        functions = entry["function"] if isinstance(entry["function"], list) else [entry["function"]]
        for function in functions:
            by_name[entry["name"] if len(functions) == 1 else f"{entry['name']}.{function}"] = (entry, function)
    hand, mine = [], []
    for i, (name, _, function, params, entry) in enumerate(pairs):
        original, _ = by_name[name]
        one = {k: v for k, v in original.items() if k not in ("function", "params", "name", "folders")}
        hand.append({**one, "name": f"hand{i}", "function": function, "params": [params]})
        mine.append({**entry, "name": f"mine{i}", "folders": [f"mine{i}"]})
    tables = {name: pd.read_csv(_run(workdir, name, entries)) for name, entries in (("hand", hand), ("mine", mine))}
    equal, differ = 0, []
    for i, (name, *_rest) in enumerate(pairs):
        sides = []
        for side in ("hand", "mine"):
            table = tables[side][tables[side]["kernel"] == f"{side}{i}"]
            keep = [c for c in table.columns if c not in NAMING]
            sides.append(table[keep].sort_values(["mode", "step"]).reset_index(drop=True))
        if len(sides[0]) and sides[0].astype(str).equals(sides[1].astype(str)):
            equal += 1
        else:
            differ.append(f"{name}: {len(sides[0])} rows by hand, {len(sides[1])} captured")
    print(f"rows equal for {equal} of {len(pairs)} captured configurations")
    for line in differ:
        print("  differ " + line)
    return 0 if not differ else 1


if __name__ == "__main__":
    commands = {"capture": capture, "match": match, "rows": rows}
    if len(sys.argv) < 4 or sys.argv[1] not in commands:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    sys.exit(commands[sys.argv[1]](*sys.argv[2:]))
