rule version_table:
    input:
        lambda wildcards: list(release_env_markers().values()),
    output:
        VERSIONS_TABLE,
    log:
        "logs/tables/version_table.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        # each entry of config versions as checked, with what it can do where that was probed before any build
        entries=lambda wildcards: [
            {**entry.record(), **version_table.probed_record(GRID.probed.get(name))}
            for name, entry in GRID.entries.items()
        ],
        markers=release_env_markers,
    script:
        "../../scripts/version_table.py"


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
