from tilelang_churn.kernel import kernels

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
        # inside the working directory, relative: the same in every checkout (a cached batch's key holds them)
        script=relative_to_workdir(f"{SCRIPTS}/release_envs.py"),
        root=lambda wildcards, output: str(Path(output[0]).parents[1]),
        requirements=relative_to_workdir(REQUIREMENTS),
        entry=release_env_args,
        # a rebuilt wheel (another sha256) rebuilds its environment, and so retraces its jobs
        identity=lambda wildcards: GRID.entries[wildcards.version].identity,
    shell:
        "python3 {params.script:q} build --version {wildcards.version:q} --root {params.root:q}"
        " --requirements {params.requirements:q} --log {log:q} {params.entry:q}"


# Trace jobs run in batches (scripts/trace_batch.py; batches.Batch): one process per batch of at most
# trace_batch_size jobs of one release, trace-env jobs apart (TL_LOWER_TRACE is read at import), imports
# TileLang once and forks a child per job, at most `threads` at a time. Each job keeps its own passes.csv,
# run.json and log, as gemm_lower_trace.py alone writes them; a missing or outdated job file reruns its batch.
# One rule per batch, its paths without wildcards: Snakemake finds a file's producer by trying every output of
# the candidate rules, so 10,000 jobs in one rule with wildcards cost minutes of DAG building.
# Exit status of a job: 0 ok (an "unsupported" row too); 1 a pass failed and is recorded as a row of
# passes.csv (data: tolerated, unless config fail_on_pass_error); 2 bad arguments and 3 not recorded or a
# broken environment (the batch fails).
# With config trace_cache a batch of a released TileLang is eligible for Snakemake's between-workflow cache
# (`--cache`, SNAKEMAKE_OUTPUT_CACHE): it writes its jobs' files as one archive, the cached output (a cached rule
# has no benchmark), and rule <batch>_files puts them in place.
for batch in GRID.batches:

    if not trace_cached(batch):

        rule:
            name:
                batch.name
            input:
                **batch_inputs(batch),
            output:
                passes=batch_paths(batch, f"{RUN_DIR}/passes.csv"),
                run=batch_paths(batch, f"{RUN_DIR}/run.json"),
            log:
                **batch_logs(batch),
            benchmark:
                f"results/benchmarks/trace/{batch.version}/{batch.name}.tsv"
            # the longest batches first, so that the last batch to finish is a short one while the other cores idle
            priority: batch_priority(batch)
            conda:
                "../envs/tilelang.yaml"
            threads: batch_threads(batch)
            # On Slurm one job per batch: measured 0.3-2 s of lowering per job (1-3.5 s with TL_LOWER_TRACE's
            # HTML) and up to 0.6 GB per child beside the 0.5 GB parent, after a 2-5 s import.
            resources:
                mem_mb=lambda wildcards, threads: 1000 + 600 * threads,
                runtime=batch_runtime(len(batch.jobs), seconds_per_job=4, floor_minutes=10),
            params:
                **batch_params(batch),
            script:
                "../../scripts/trace_batch.py"

    else:

        rule:
            name:
                batch.name
            input:
                **batch_inputs(batch),
            output:
                archive=trace_archive_path(batch),
            log:
                **batch_logs(batch),
            cache: "omit-software"
            priority: batch_priority(batch)
            conda:
                "../envs/tilelang.yaml"
            threads: batch_threads(batch)
            # On Slurm one job per batch: measured 0.3-2 s of lowering per job (1-3.5 s with TL_LOWER_TRACE's
            # HTML) and up to 0.6 GB per child beside the 0.5 GB parent, after a 2-5 s import.
            resources:
                mem_mb=lambda wildcards, threads: 1000 + 600 * threads,
                runtime=batch_runtime(len(batch.jobs), seconds_per_job=4, floor_minutes=10),
            params:
                **batch_params(batch),
                # the key beyond the jobs' arguments: the release, the tracing code, every kernel file traced
                cache_key=trace_cache_key(batch),
            script:
                "../../scripts/trace_batch.py"

        rule:
            name:
                f"{batch.name}_files"
            input:
                archive=trace_archive_path(batch),
            output:
                passes=batch_paths(batch, f"{RUN_DIR}/passes.csv"),
                run=batch_paths(batch, f"{RUN_DIR}/run.json"),
            # Local on a cluster: one archive unpacked on the shared filesystem.
            localrule: True
            threads: 1
            resources:
                mem_mb=500,
                runtime=5,
            script:
                "../../scripts/trace_archive.py"
