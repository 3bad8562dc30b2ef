# One process per trace batch draws its jobs' figures (plot_churn.py bars): a fresh Python with pandas and
# matplotlib per figure cost more than the figure (2 s against 0.1-0.3 s); it forks `threads` children that
# draw them. Any job's new passes.csv redraws its batch's figures. Config job_figures: false skips them.
for batch in GRID.batches if config["job_figures"] else []:

    rule:
        name:
            f"plot_job_churn_{batch.name}"
        input:
            passes=batch_paths(batch, f"{RUN_DIR}/passes.csv"),
        output:
            [
                report(
                    path,
                    caption="../report/job_churn.rst",
                    category="Per-job churn",
                    subcategory="tilelang {version}, {target}".format(**job.wildcards),
                    labels={"shape": job.shape, "mode": job.mode},
                )
                for job, path in zip(batch.jobs, batch_paths(batch, jobs.JOB_FIGURE))
            ],
        log:
            f"logs/plots/churn/{batch.name}.log",
        # After every ready trace batch and table: the figures fill the cores those leave idle, and the tables and
        # the comparison do not wait behind the figures (0.3 s of CPU for an 85-pass job).
        priority: -1
        # Local on a cluster: seconds of drawing from files already on the shared filesystem.
        localrule: True
        conda:
            "../envs/tilelang.yaml"
        threads: figure_threads
        resources:
            mem_mb=lambda wildcards, threads: 500 + 300 * threads,
            runtime=batch_runtime(len(batch.jobs), seconds_per_job=1, floor_minutes=5),
        params:
            figure="bars",
            measure=config["churn_measure"],
            sources=trace_modes.sources_text(),
        script:
            "../../scripts/plot_churn.py"


# From the jobs of its mode, not churn.csv: drawn beside the table after the last batch, not after the table.
rule plot_heatmap:
    input:
        passes=per_job(f"{RUN_DIR}/passes.csv", HEATMAP_JOBS),
        # plot_churn.py checks each passes.csv against it (passes_table.read_table)
        runs=per_job(f"{RUN_DIR}/run.json", HEATMAP_JOBS),
    output:
        [
            (
                report(path, caption="../report/heatmap.rst", category="Churn heatmap")
                if path.endswith(".png")
                else path
            )
            for path in get_heatmap_paths()
        ],
    log:
        "logs/plots/churn_heatmap.log",
    # Local on a cluster: one figure from churn.csv, seconds; a queue wait costs more.
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        figure="heatmap",
        measure=config["churn_measure"],
        mode=HEATMAP_MODE,
        sources=trace_modes.sources_text(),
    script:
        "../../scripts/plot_churn.py"
