#!/usr/bin/env python3
"""Compare the lowering of the same jobs across TileLang releases: tables and figures under --out-dir.

    python3 scripts/compare_releases.py --out-dir results/compare [--heatmap-config LABEL] [--formats png,svg] \\
        PASSES_CSV [PASSES_CSV ...]

The logic: tilelang_churn/figures/release_figures.py (tables: tables/release_tables.py). SIGINT, SIGTERM or the
death of its parent stop it in one line, exit 128 + the signal (tilelang_churn/core/interrupt.py).
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.figures import release_figures  # matplotlib, pandas: imported under the signal guard

    parser = argparse.ArgumentParser(description=release_figures.__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", required=True, help="folder of the tables and figures")
    parser.add_argument(
        "--heatmap-config",
        default=None,
        metavar="LABEL",
        help="configuration label of the heatmap (the 'configuration' column); default: the one "
        "with jobs in the most releases",
    )
    parser.add_argument(
        "--formats",
        default="png,svg",
        type=release_figures.figure_formats,
        help="comma-separated figure formats among png, svg, pdf (default: png,svg)",
    )
    parser.add_argument(
        "--heatmap-job",
        default=None,
        metavar="TARGET/SHAPE/MODE",
        help="the heatmap's configuration by the folders of its jobs (results/runs/<version>/TARGET/SHAPE/MODE/); "
        "instead of --heatmap-config",
    )
    parser.add_argument(
        "--speed",
        metavar="KERNEL_SPEED_CSV",
        help="the GPU stage's kernel_speed.csv: also write speed_attribution.csv and its section of the index",
    )
    parser.add_argument(
        "--knockout", metavar="KNOCKOUT_CSV", help="with --speed: the knockout's knockout.csv (its GPU columns)"
    )
    parser.add_argument(
        "--release-source",
        action="append",
        default=[],
        metavar="RELEASE=ENV_DIR",
        help="a release's environment, where the pages' pass links find each pass's definition (repeatable; the "
        "release installed beside this script needs none; others link to a search)",
    )
    parser.add_argument(
        "passes",
        nargs="+",
        metavar="PASSES_CSV",
        help="per-job passes.csv; the job's IR archive is <its folder>/ir.json.gz",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.figures import release_figures

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.heatmap_job and args.heatmap_config:
        parser.error("argument --heatmap-job: not with --heatmap-config (both choose the heatmap's configuration)")
    if args.heatmap_job and len(args.heatmap_job.split("/")) != 3:
        parser.error(f"argument --heatmap-job: {args.heatmap_job!r} is not TARGET/SHAPE/MODE")
    if args.knockout and not args.speed:
        parser.error("argument --knockout: only used with --speed (the latencies it attributes)")
    try:
        sources = release_figures.release_sources(args.release_source)
    except ValueError as exc:
        parser.error(f"argument --release-source: {exc}")
    return release_figures.build(
        args.passes,
        args.out_dir,
        args.heatmap_config,
        args.formats,
        args.speed,
        args.knockout,
        args.heatmap_job,
        sources,
    )


if __name__ == "__main__":
    interrupt.run("compare_releases", main)
