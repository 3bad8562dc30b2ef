"""Helpers of the comparison benchmarks (benchmarks/test_compare_speed.py): many releases made from real jobs, the
pages' sizes, and where the time of a whole comparison run goes.

    python benchmarks/compare_bench.py releases --from RUN_DIR --releases 8 --out DIR   # synthesise N releases
    python benchmarks/compare_bench.py floor WORKDIR --wall SECONDS --cores 2              # the floor of a run

``releases``: the jobs of a real run over several releases (``RUN_DIR/results/runs/<release>/...``), copied as N
releases (the supported ones, oldest first), each a copy of one real release's jobs in turn, with
``tilelang_version`` rewritten and a run.json recording the new file's rows and sha256 (as a real run would);
the IR archives are copied as they are. The comparison then has real pass sequences, real IR and real edits.

``floor``: from one finished run (its jobs' run.json and the Snakemake log), the floor of its wall time, (sum of the
lowerings' ``lower_seconds`` + each trace batch's ``process.import_seconds``) / cores, a lowering that served several
jobs (run.json's ``lowering``, config share_lowering) counted once, the same sum in CPU seconds
(``lower_cpu_seconds``, ``import_cpu_seconds``: unlike wall seconds, they do not grow when more processes than cores
run), the longest chain (a trace batch's import and then its longest lowering: the part of the trace phase that more
cores cannot shorten), how busy the cores were in the whole run (CPU seconds of every process, from the caller), and
the wall time spans of the run's parts from Snakemake's log (1 s resolution): outside any job (parse, DAG), release
environments, trace batches, and each later rule (tables, figures, comparison, book), each from its first start to its
last finish.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import shutil
import sys
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tilelang_churn.batching import job_cost  # noqa: E402
from tilelang_churn.core import passes_table as pt  # noqa: E402


def supported_releases() -> list[str]:
    import yaml

    data = yaml.safe_load((REPO / "config" / "tilelang_releases.yaml").read_text())
    releases = data.get("releases", data)
    names = (
        list(releases) if isinstance(releases, dict) else [r["version"] if isinstance(r, dict) else r for r in releases]
    )
    from tilelang_churn.core.releases import sort_releases

    return sort_releases(str(name) for name in names)


def synthesise_releases(run_dir: Path, count: int, out: Path, modes: tuple[str, ...] | None = None) -> list[Path]:
    """count releases under out/results/runs made of copies of run_dir's releases; returns their passes.csv."""
    runs = run_dir / "results" / "runs"
    real = sorted((p.name for p in runs.iterdir() if p.is_dir()), key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
    names = supported_releases()[-count:]
    if len(names) < count:
        raise SystemExit(f"only {len(names)} supported releases")
    written = []
    for k, name in enumerate(names):
        source = runs / real[k % len(real)]
        for passes in sorted(source.glob("*/*/*/passes.csv")):
            job = passes.parent
            if modes and job.name not in modes:
                continue
            dest = out / "results" / "runs" / name / job.relative_to(source)
            dest.mkdir(parents=True, exist_ok=True)
            rows = list(csv.DictReader(io.StringIO(passes.read_text())))
            buffer = io.StringIO()
            writer = csv.DictWriter(buffer, fieldnames=pt.COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows({**row, "tilelang_version": name} for row in rows)
            (dest / "passes.csv").write_text(buffer.getvalue())
            info = json.loads((job / "run.json").read_text())
            info.update(out_dir=str(dest), passes_csv=pt.fingerprint(dest / "passes.csv"))
            (dest / "run.json").write_text(json.dumps(info))
            if (job / "ir.json.gz").is_file():
                shutil.copy(job / "ir.json.gz", dest / "ir.json.gz")
            written.append(dest / "passes.csv")
    return written


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+)")


def rule_spans(log: Path) -> tuple[datetime | None, dict[str, list[datetime]]]:
    """(first timestamp, {rule: [first start, last finish]}) from a Snakemake log."""
    first = None
    stamp = None
    rule_of: dict[str, str] = {}
    spans: dict[str, list[datetime]] = {}
    current_rule = None
    for line in log.read_text(errors="replace").splitlines():
        m = _STAMP.match(line)
        if m:
            stamp = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
            first = first or stamp
            continue
        m = _RULE.match(line)
        if m:
            current_rule = m.group(1)
            continue
        m = _JOBID.match(line)
        if m and current_rule and stamp:
            rule_of[m.group(1)] = current_rule
            spans.setdefault(current_rule, [stamp, stamp])
            current_rule = None
            continue
        m = _FINISHED.match(line)
        if m and stamp and m.group(1) in rule_of:
            span = spans[rule_of[m.group(1)]]
            span[1] = max(span[1], stamp)
    return first, spans


def floor_report(workdir: Path, wall: float, cores: int, cpu_seconds: float | None = None) -> dict:
    """The floor of a finished run and where its wall time went (module docstring); CPU_SECONDS: what every
    process of the run used (user + system), when the caller measured it."""
    lower = lower_cpu = 0.0
    imports: dict[tuple, tuple[float, float]] = {}
    jobs = shared = 0  # shared: jobs recorded from another job's lowering (run.json's lowering.by)
    longest: dict[tuple, float] = {}  # each trace process's longest lowering, CPU seconds
    for run_json in (workdir / "results" / "runs").glob("*/*/*/*/run.json"):
        info = json.loads(run_json.read_text())
        jobs += 1
        if not job_cost.lowered_by_another(info):  # a shared lowering counts once
            lower += float(info.get("lower_seconds") or 0.0)
            lower_cpu += float(info.get("lower_cpu_seconds") or 0.0)
        else:
            shared += 1
        process = info.get("process") or {}
        key = (run_json.relative_to(workdir / "results" / "runs").parts[0], process.get("pid"))
        longest[key] = max(longest.get(key, 0.0), float(info.get("lower_cpu_seconds") or 0.0))
        imports[key] = (
            float(process.get("import_seconds") or info.get("import_seconds") or 0.0),
            float(process.get("import_cpu_seconds") or 0.0),
        )
    import_wall = sum(wall for wall, _ in imports.values())
    import_cpu = sum(cpu for _, cpu in imports.values())
    floor = (lower + import_wall) / cores
    cpu_floor = (lower_cpu + import_cpu) / cores
    out = {
        "jobs": jobs,
        "served_by_another_lowering": shared,
        "batches": len(imports),
        "lower_seconds": round(lower, 3),
        "import_seconds": round(import_wall, 3),
        "floor_seconds": round(floor, 3),
        "wall_seconds": round(wall, 3),
        "ratio": round(wall / floor, 3) if floor else None,
        "lower_cpu_seconds": round(lower_cpu, 3),
        "import_cpu_seconds": round(import_cpu, 3),
        "cpu_floor_seconds": round(cpu_floor, 3),
        "cpu_ratio": round(wall / cpu_floor, 3) if cpu_floor else None,
        # what no number of cores shortens: a batch's import, then its longest lowering (CPU seconds)
        "longest_chain_cpu_seconds": round(max((imports[key][1] + longest[key] for key in imports), default=0.0), 3),
        "run_cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 1),
        "busy": None if cpu_seconds is None else round(cpu_seconds / (cores * wall), 3),
        "spans": {},
    }
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    logs = [log for log in logs if "Finished jobid" in log.read_text(errors="replace")]  # runs, not --report
    if logs:
        first, spans = rule_spans(logs[-1])
        groups: dict[str, list[datetime]] = {}
        for rule, (start, end) in spans.items():
            group = (
                "trace batches"
                if rule.startswith("trace_")
                else "per-job figures"
                if rule.startswith("plot_job")
                else rule
            )
            span = groups.setdefault(group, [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
        if groups:
            jobs_span = (max(e for _, e in groups.values()) - min(s for s, _ in groups.values())).total_seconds()
            out["spans"]["outside any job (parse, DAG, start-up; wall minus the jobs' span)"] = round(
                wall - jobs_span, 1
            )
        for group, (start, end) in sorted(groups.items(), key=lambda item: item[1][0]):
            out["spans"][group] = {"start": (start - first).total_seconds(), "seconds": (end - start).total_seconds()}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("releases")
    rel.add_argument("--from", dest="run_dir", required=True, type=Path)
    rel.add_argument("--releases", type=int, default=8)
    rel.add_argument("--out", required=True, type=Path)
    flo = sub.add_parser("floor")
    flo.add_argument("workdir", type=Path)
    flo.add_argument("--wall", type=float, required=True)
    flo.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    if args.command == "releases":
        made = synthesise_releases(args.run_dir, args.releases, args.out)
        print(f"{len(made)} jobs under {args.out / 'results' / 'runs'}")
    else:
        print(json.dumps(floor_report(args.workdir, args.wall, args.cores), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
