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
    conda:
        "../envs/tilelang.yaml"
    params:
        figure="bars",
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
    conda:
        "../envs/tilelang.yaml"
    params:
        figure="heatmap",
        mode=HEATMAP_MODE,
        sources=trace_modes.sources_text(),
    script:
        "../../scripts/plot_churn.py"
