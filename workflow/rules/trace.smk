# One job per (target, shape, mode): gemm_lower_trace.py with the job's arguments from the grid.
# Exit status: 0 ok; 1 a pass failed and is recorded as a row of passes.csv (data: the job succeeds);
# 2 bad arguments (the job fails).


rule trace:
    output:
        passes=f"{RUN_DIR}/passes.csv",
        run=f"{RUN_DIR}/run.json",
    log:
        "logs/trace/{target}/{shape}/{mode}.log",
    benchmark:
        "results/benchmarks/trace/{target}/{shape}/{mode}.tsv"
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        script=TRACE_SCRIPT,
        args=get_trace_args,
        out_dir=lambda wildcards, output: str(Path(output.passes).parent),
    shell:
        "python3 {params.script} {params.args} --out {params.out_dir} > {log} 2>&1 || [ $? -eq 1 ]"
