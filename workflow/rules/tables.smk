rule churn_table:
    input:
        get_all_passes_csv,
    output:
        churn="results/churn.csv",
        # rows and sha256 of churn.csv, written after it: its readers refuse a churn.csv changed since
        manifest="results/churn.json",
        summary="results/churn_summary.csv",
    log:
        "logs/tables/churn_table.log",
    # Local on a cluster: seconds of pandas over files already on the shared filesystem; a queue wait costs more.
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/churn_table.py"
