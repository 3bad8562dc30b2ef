rule static_check:
    output:
        STATIC_CHECK,
    log:
        "logs/static/static_check.log",
    conda:
        "../envs/tilelang.yaml"
    # A Slurm job too: seconds, and the first sign that the compute nodes see the workflow's venv and TileLang.
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        script=TRACE_SCRIPT,
    shell:
        "python3 {params.script:q} --static-only > {output:q} 2> {log:q}"


# `snakemake --cores 4 static`: only the static check (py_compile + TileLang entry points, no import).
# A rule without shell/run always runs locally, like `all`.
rule static:
    input:
        rules.static_check.output,
