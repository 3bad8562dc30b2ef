rule plot_job_churn:
    input:
        passes=f"{RUN_DIR}/passes.csv",
    output:
        report(
            f"{FIGURE_DIR}/churn/{JOB_PATH}.png",
            caption="../report/job_churn.rst",
            category="Per-job churn",
            subcategory="tilelang {version}, {target}",
            labels={"shape": "{shape}", "mode": "{mode}"},
        ),
    log:
        f"logs/plots/churn/{JOB_PATH}.log",
    # Local on a cluster: one small figure per job, a second or two each; a queue wait costs more.
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        figure="bars",
        measure=config["churn_measure"],
        sources=trace_modes.sources_text(),
    script:
        "../../scripts/plot_churn.py"


rule plot_heatmap:
    input:
        churn="results/churn.csv",
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
