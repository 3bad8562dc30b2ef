rule churn_table:
    input:
        get_all_passes_csv,
    output:
        churn="results/churn.csv",
        summary="results/churn_summary.csv",
    log:
        "logs/tables/churn_table.log",
    params:
        python=PYTHON,
    conda:
        "../envs/tilelang.yaml"
    shell:
        "{params.python} scripts/churn_table.py --out {output.churn}"
        " --summary {output.summary} {input} > {log} 2>&1"
