"""A grid of N trace jobs made of copies of one real job, for the scale benchmarks (issue [6] (c), (d)).

    python benchmarks/synthetic_grid.py --job results/runs/0.1.15/cuda-sm90/1024x1024x1024/trace-env \\
        --jobs 10000 --workdir /tmp/big

Writes WORKDIR/config/config.yaml with N shapes (one target, one mode: the job's) and, for each shape, the
job's passes.csv with that shape in its provenance columns and a run.json recording the new file's rows and
sha256, as a real run would. Snakemake then finds every trace output present: `snakemake results/churn.csv`
measures the DAG and the gathering of N tables, not the lowering.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tilelang_churn.core import passes_table as pt  # noqa: E402


def shapes(count: int) -> list[dict]:
    """count distinct GEMM shapes (M, N multiples of 64; K fixed)."""
    return [{"M": 64 * (1 + i // 100), "N": 64 * (1 + i % 100), "K": 1024} for i in range(count)]


def make_grid(job_dir: Path, count: int, workdir: Path) -> list[Path]:
    run = json.loads((job_dir / "run.json").read_text())
    rows = list(csv.DictReader(io.StringIO((job_dir / "passes.csv").read_text())))
    first = rows[0]
    version, target_name, mode = first["tilelang_version"], first["target_name"], first["mode"]
    (workdir / "config").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "config" / "tilelang_releases.yaml", workdir / "config")
    block = [int(first[key]) for key in ("block_M", "block_N", "block_K")]
    config = {
        "shapes": shapes(count),
        "targets": [target_name],
        "modes": [mode],
        "defaults": {
            "block": block,
            **{key: first[key] for key in ("dtype", "accum_dtype")},
            **{key: int(first[key]) for key in ("threads", "stages")},
        },
    }
    (workdir / "config" / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
    written = []
    for shape in config["shapes"]:
        out = workdir / "results" / "runs" / version / target_name / f"{shape['M']}x{shape['N']}x{shape['K']}" / mode
        out.mkdir(parents=True, exist_ok=True)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=pt.COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({**row, "M": shape["M"], "N": shape["N"], "K": shape["K"]} for row in rows)
        (out / "passes.csv").write_text(buffer.getvalue())
        job_run = {**run, "out_dir": str(out), "passes_csv": pt.fingerprint(out / "passes.csv")}
        (out / "run.json").write_text(json.dumps(job_run))
        written.append(out)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", required=True, type=Path, help="a finished job's folder (passes.csv, run.json)")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--workdir", required=True, type=Path)
    args = parser.parse_args(argv)
    made = make_grid(args.job, args.jobs, args.workdir)
    print(f"{len(made)} jobs under {args.workdir / 'results' / 'runs'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
