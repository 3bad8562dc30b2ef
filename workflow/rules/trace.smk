# One job per (shape, target, mode). Exit status of gemm_lower_trace.py: 0 ok; 1 a pass failed and is
# recorded as a row of passes.csv (data: the job succeeds); 2 bad arguments (the job fails).


rule trace:
    output:
        passes=f"{RUN_DIR}/passes.csv",
        run=f"{RUN_DIR}/run.json",
    log:
        "logs/trace/{target}/{shape}/{mode}.log",
    benchmark:
        "results/benchmarks/trace/{target}/{shape}/{mode}.tsv"
    params:
        python=PYTHON,
        shape=trace_param("shape"),
        block=trace_param("block"),
        dtype=trace_param("dtype"),
        accum_dtype=trace_param("accum_dtype"),
        threads=trace_param("threads"),
        stages=trace_param("stages"),
        target=trace_param("target"),
        passes=trace_param("passes"),
        out_dir=get_trace_out_dir,
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/tilelang.yaml"
    shell:
        "{params.python} scripts/gemm_lower_trace.py --mode {wildcards.mode}"
        " --shape {params.shape} --block {params.block} --dtype {params.dtype}"
        " --accum-dtype {params.accum_dtype} --threads {params.threads}"
        " --stages {params.stages} --target {params.target} {params.passes}"
        " --out {params.out_dir} > {log} 2>&1 || [ $? -eq 1 ]"
