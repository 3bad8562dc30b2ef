rule churn_table:
    input:
        get_all_passes_csv,
    output:
        churn="results/churn.csv",
        summary="results/churn_summary.csv",
    log:
        "logs/tables/churn_table.log",
    conda:
        "../envs/tilelang.yaml"
    script:
        "../../scripts/churn_table.py"
