# A release other than the installed one gets its own uv environment, built once and reused
# (release_envs.py verifies the import before it writes the marker, the rule's output).


rule release_env:
    output:
        RELEASE_ENV_MARKER,
    log:
        "logs/release_env/tilelang-{version}.log",
    # Local on a cluster: uv downloads the release from the package index, which compute nodes often cannot
    # reach, and hardlinks from the submitting user's uv cache; the environment lands in release_env_dir, on
    # the shared filesystem, where the trace jobs on the compute nodes run it.
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        script=f"{SCRIPTS}/release_envs.py",
        root=lambda wildcards, output: str(Path(output[0]).parents[1]),
        requirements=REQUIREMENTS,
    shell:
        "python3 {params.script} build --version {wildcards.version} --root {params.root}"
        " --requirements {params.requirements} --log {log}"


# One job per (version, target, shape, mode): gemm_lower_trace.py with the job's arguments from the grid.
# Exit status: 0 ok (an "unsupported" row too); 1 a pass failed and is recorded as a row of passes.csv (data:
# the job succeeds, unless config fail_on_pass_error); 2 bad arguments and 3 not recorded or a broken
# environment (the job fails).
rule trace:
    input:
        get_release_env,
    output:
        passes=f"{RUN_DIR}/passes.csv",
        run=f"{RUN_DIR}/run.json",
    log:
        f"logs/trace/{JOB_PATH}.log",
    benchmark:
        f"results/benchmarks/trace/{JOB_PATH}.tsv"
    conda:
        "../envs/tilelang.yaml"
    # A Slurm job each (sbatch -c 1 --mem 2000 -t 10): measured 15-25 s and a 0.5 GB peak for a 200^3 GEMM.
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        script=TRACE_SCRIPT,
        args=get_trace_args,
        out_dir=lambda wildcards, output: str(Path(output.passes).parent),
        # the status accepted besides 0: 1 (a recorded pass failure), or none (0 never follows ||)
        tolerated=0 if config["fail_on_pass_error"] else 1,
    shell:
        "python3 {params.script} {params.args} --out {params.out_dir} > {log} 2>&1 || [ $? -eq {params.tolerated} ]"
