rule plot_job_churn:
    input:
        passes=f"{RUN_DIR}/passes.csv",
    output:
        report(
            f"{FIGURE_DIR}/churn/{{target}}/{{shape}}/{{mode}}.png",
            caption="../report/job_churn.rst",
            category="Per-job churn",
            subcategory="{target}",
            labels={"shape": "{shape}", "mode": "{mode}"},
        ),
    log:
        "logs/plots/churn/{target}/{shape}/{mode}.log",
    params:
        python=PYTHON,
    conda:
        "../envs/tilelang.yaml"
    shell:
        "{params.python} scripts/plot_churn.py bars --passes {input.passes}"
        " --out {output} > {log} 2>&1"


rule plot_heatmap:
    input:
        churn="results/churn.csv",
    output:
        get_heatmap_outputs(),
    log:
        "logs/plots/churn_heatmap.log",
    params:
        python=PYTHON,
        mode=HEATMAP_MODE,
    conda:
        "../envs/tilelang.yaml"
    shell:
        "{params.python} scripts/plot_churn.py heatmap --churn {input.churn}"
        " --out {output} --mode {params.mode} > {log} 2>&1"
