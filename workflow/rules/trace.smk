from tilelang_churn.grid import kernels

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
        "python3 {params.script:q} build --version {wildcards.version:q} --root {params.root:q}"
        " --requirements {params.requirements:q} --log {log:q}"


# Trace jobs run in batches (scripts/trace_batch.py; job_grid.Batch): one process per batch of at most
# trace_batch_size jobs of one release, trace-env jobs apart (TL_LOWER_TRACE is read at import), imports
# TileLang once and forks a child per job, at most `threads` at a time. Each job keeps its own passes.csv,
# run.json and log, as gemm_lower_trace.py alone writes them; a missing or outdated job file reruns its batch.
# One rule per batch, its paths without wildcards: Snakemake finds a file's producer by trying every output of
# the candidate rules, so 10,000 jobs in one rule with wildcards cost minutes of DAG building.
# Exit status of a job: 0 ok (an "unsupported" row too); 1 a pass failed and is recorded as a row of
# passes.csv (data: tolerated, unless config fail_on_pass_error); 2 bad arguments and 3 not recorded or a
# broken environment (the batch fails).
for batch in GRID.batches:

    rule:
        name:
            batch.name
        input:
            release_env=get_release_env(batch.version),
            # a user's kernel file: editing it retraces its batches (its jobs only: job_grid.make_batches)
            kernel_files=batch.kernel_files,
        output:
            passes=batch_paths(batch, f"{RUN_DIR}/passes.csv"),
            run=batch_paths(batch, f"{RUN_DIR}/run.json"),
        log:
            batch=f"logs/trace/{batch.version}/{batch.name}.log",
            jobs=batch_paths(batch, TRACE_LOG),
        benchmark:
            f"results/benchmarks/trace/{batch.version}/{batch.name}.tsv"
        # the longest batches first (their expected seconds, core/job_cost.py), so that the last batch to finish
        # is a short one while the other cores idle
        priority: round(batch.expected_seconds)
        conda:
            "../envs/tilelang.yaml"
        # On Slurm one job per batch: measured 0.3-2 s of lowering per job (1-3.5 s with TL_LOWER_TRACE's HTML) and
        # up to 0.6 GB per child beside the 0.5 GB parent, after a 2-5 s import.
        threads: batch_threads
        resources:
            mem_mb=lambda wildcards, threads: 1000 + 600 * threads,
            runtime=batch_runtime(len(batch.jobs), seconds_per_job=4, floor_minutes=10),
        params:
            # a user's kernel file by content too: an edit keeping an older mtime (cp -p, rsync -t, tar x)
            # retraces its batches; none for the other batches, whose params stay as they were
            **({"kernel_sha256": kernels.file_digests(batch.kernel_files)} if batch.kernel_files else {}),
            jobs=batch_jobs_param(batch),
            release_env=GRID.release_env(batch.version) or "",
            # statuses accepted besides 0: 1 (a recorded pass failure), or none
            tolerate=[] if config["fail_on_pass_error"] else [1],
        script:
            "../../scripts/trace_batch.py"
