rule static_check:
    output:
        STATIC_CHECK,
    log:
        "logs/static/static_check.log",
    params:
        python=PYTHON,
    conda:
        "../envs/tilelang.yaml"
    shell:
        "{params.python} scripts/gemm_lower_trace.py --static-only > {output} 2> {log}"


# `snakemake --cores 4 static`: only the static check (py_compile + TileLang entry points, no import).
# A rule without shell/run always runs locally, like `all`.
rule static:
    input:
        rules.static_check.output,
