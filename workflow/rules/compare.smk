# Comparison of TileLang releases (only when config versions lists more than one): churn per release,
# pass sequences of consecutive releases aligned (with whether each pass made the same edit), where the
# printed IR and the edits first diverge, two figures, and the HTML pages (index.html and pages/: one per
# configuration x release pair). compare_releases.py reads each job's ir.json.gz (instrument jobs keep it
# when releases are compared).


rule compare_releases:
    input:
        passes=get_all_passes_csv,
        # with the GPU stage: its latencies and the knockout's GPU columns, for speed_attribution.csv
        attribution=lambda wildcards: list(get_attribution_inputs().values()),
    output:
        **get_attribution_outputs(),
        by_version=f"{COMPARE_DIR}/churn_by_version.csv",
        alignment=f"{COMPARE_DIR}/pass_alignment.csv",
        divergence=f"{COMPARE_DIR}/divergence.csv",
        heatmap=report(
            f"{COMPARE_DIR}/release_heatmap.png",
            caption="../report/compare_heatmap.rst",
            category="Releases",
        ),
        heatmap_svg=f"{COMPARE_DIR}/release_heatmap.svg",
        trend=report(
            f"{COMPARE_DIR}/release_trend.png",
            caption="../report/compare_trend.rst",
            category="Releases",
        ),
        trend_svg=f"{COMPARE_DIR}/release_trend.svg",
        index=report(
            f"{COMPARE_DIR}/index.html",
            caption="../report/compare_index.rst",
            category="Releases",
        ),
        pages=report(
            directory(f"{COMPARE_DIR}/pages"),
            patterns=["{name}.html"],
            caption="../report/compare_pages.rst",
            category="Releases",
            subcategory="Pages",
        ),
    log:
        "logs/compare/compare_releases.log",
    # Before the heatmap and the per-job figures once the traces are done: the book's figure 3 waits for it, so from
    # the last trace batch on it is the critical path
    priority: 1
    # Local on a cluster: tables and two figures from the jobs' small CSVs and IR archives, seconds.
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        script=f"{SCRIPTS}/compare_releases.py",
        out_dir=lambda wildcards, output: str(Path(output.by_version).parent),
        # config release_heatmap (default: the book's reference), as the folders of its jobs
        heatmap=["--heatmap-job", "/".join(GRID.release_heatmap)] if GRID.release_heatmap else [],
        # where each pass name links to: its definition in the release's environment (none: the installed one)
        sources=[
            f"--release-source={version}={GRID.release_env(version)}"
            for version in GRID.versions
            if GRID.release_env(version)
        ],
        attribution=lambda wildcards: [
            arg for name, path in get_attribution_inputs().items() for arg in (f"--{name}", path)
        ],
    # exec: the script is the job's process (no shell in between to be killed alone, leaving it to write on)
    shell:
        "exec python3 {params.script:q} --out-dir {params.out_dir:q} {params.heatmap:q} {params.attribution:q} "
        "{params.sources:q} "
        "{input.passes:q} "
        "> {log:q} 2>&1"
