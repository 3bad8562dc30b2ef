# The pass knockout (config knockout; scripts/tilelang_churn/knockout/knockout_batch.py): per configuration x target
# x release, the baseline lowering and one lowering per knocked-out pass (TVM skips it), each a row of the
# configuration's knockout.csv; gathered into results/knockout/knockout.csv, drawn as one figure per configuration
# and listed on results/knockout/index.html. One process per batch imports TileLang once and forks a child per
# lowering, at most `threads` at a time: a lowering that aborts, segfaults or hangs is its row, never its batch's end.
for batch in GRID.knockout_batches:

    rule:
        name:
            batch.name
        input:
            release_env=get_release_env(batch.version),
            # a user's kernel file: editing it reruns its knockout batches
            kernel_files=batch.kernel_files,
        output:
            tables=batch_knockout_paths(batch, "knockout.csv"),
            records=batch_knockout_paths(batch, "knockout.json"),
            sources=batch_knockout_paths(batch, "sources.json.gz"),
        log:
            batch=f"logs/knockout/{batch.version}/{batch.name}.log",
            jobs=[grid_keys.knockout_log(job) for job in batch.jobs],
        benchmark:
            f"results/benchmarks/knockout/{batch.version}/{batch.name}.tsv"
        priority: -2
        conda:
            "../envs/tilelang.yaml"
        # measured 0.1-1 s of lowering per variant, about 30 variants per configuration, after a 2-5 s import: every
        # core, so it starts when the trace batches (ahead of it by priority) leave the cores
        threads: knockout_threads
        resources:
            mem_mb=lambda wildcards, threads: 1000 + 600 * threads,
            runtime=batch_runtime(len(batch.jobs), seconds_per_job=40, floor_minutes=10),
        params:
            **({"kernel_sha256": kernels.file_digests(batch.kernel_files)} if batch.kernel_files else {}),
            jobs=[(list(job.args), grid_keys.knockout_dir(job), grid_keys.knockout_log(job)) for job in batch.jobs],
            release_env=GRID.release_env(batch.version) or "",
            options=list(grid_keys.knockout_options(GRID.knockout)),
        script:
            "../../scripts/knockout_batch.py"


# With gpu: true, each configuration on a CUDA target of the GPU's arch: its lowered variants compiled for the GPU
# (the pass skipped inside tilelang.compile), checked and timed beside its baseline, in one job (knockout_gpu.py).
rule knockout_gpu:
    input:
        device=f"{GPU_DIR}/device.json",
        knockout=f"{KNOCKOUT_DIR}/runs/{GPU_JOB}/knockout.json",
        table=f"{KNOCKOUT_DIR}/runs/{GPU_JOB}/knockout.csv",
        kernel=lambda wc: gpu_kernel_file(wc.shape),
        site=gpu_site_marker,
    output:
        table=f"{KNOCKOUT_DIR}/gpu/{GPU_JOB}/knockout_gpu.csv",
        record=f"{KNOCKOUT_DIR}/gpu/{GPU_JOB}/knockout_gpu.json",
    log:
        f"logs/knockout/gpu/{GPU_JOB}.log",
    conda:
        "../envs/gpu.yaml"
    # one nvcc per variant and thread; launching and timing wait for the GPU's lock (gpu_bench.py), so a quarter of
    # the cores each: four configurations compile while one of them holds the GPU
    threads: lambda wildcards: max(1, knockout_threads(wildcards) // 4)
    resources:
        gpu=1,
        mem_mb=lambda wildcards, threads: 4000 + 1500 * threads,
        runtime=60,
    params:
        script=f"{SCRIPTS}/knockout_gpu.py",
        args=lambda wc: [*GPU_JOBS[(wc.version, wc.target, wc.shape)], *gpu_site_args(wc.version)],
        # config knockout.timeout_s: also how long one variant may hold the GPU (a kernel that never finishes)
        gpu_timeout=(GRID.knockout or grid_keys.KNOCKOUT_DEFAULTS)["timeout_s"],
        python=lambda wc: gpu_python(wc.version),
    shell:
        "{params.python:q} {params.script:q} --knockout {input.knockout:q} --device {input.device:q} --out {output.table:q}"
        " --workers {threads:q} --gpu-timeout {params.gpu_timeout:q} {params.args:q} > {log:q} 2>&1"


rule knockout_table:
    input:
        records=get_knockout_records,
        gpu=get_knockout_gpu_records,
        tables=get_knockout_tables,
        gpu_tables=get_knockout_gpu_tables,
    output:
        report(
            f"{KNOCKOUT_DIR}/knockout.csv",
            caption="../report/knockout_table.rst",
            category="Pass knockout",
            labels={"table": "knockout.csv"},
        ),
    log:
        "logs/knockout/knockout_table.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        script=f"{SCRIPTS}/knockout_table.py",
    shell:
        "exec python3 {params.script:q} --out {output:q} {input.records:q} {input.gpu:q} > {log:q} 2>&1"


rule knockout_figures:
    input:
        records=get_knockout_records,
        gpu=get_knockout_gpu_records,
        tables=get_knockout_tables,
        gpu_tables=get_knockout_gpu_tables,
    output:
        [
            report(
                path,
                caption="../report/knockout_figures.rst",
                category="Pass knockout",
                subcategory="tilelang {version}, {target}".format(**job.wildcards),
                labels={"configuration": job.shape},
            )
            for job, path in knockout_figure_paths()
        ],
    log:
        "logs/knockout/knockout_figures.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        script=f"{SCRIPTS}/knockout_figures.py",
        # runs/<version>/<target>/<shape>/knockout.json and figures/<version>/<target>/<shape>.png
        runs=lambda wildcards, input: str(Path(input.records[0]).parents[3]),
        out_dir=lambda wildcards, output: str(Path(output[0]).parents[2]),
    shell:
        "exec python3 {params.script:q} --runs-dir {params.runs:q} --out-dir {params.out_dir:q} {input.records:q}"
        " {input.gpu:q} > {log:q} 2>&1"


rule knockout_pages:
    input:
        records=get_knockout_records,
        gpu=get_knockout_gpu_records,
        tables=get_knockout_tables,
        gpu_tables=get_knockout_gpu_tables,
        sources=lambda wildcards: [path.replace("knockout.json", "sources.json.gz") for path in get_knockout_records()],
    output:
        index=report(
            f"{KNOCKOUT_DIR}/index.html",
            caption="../report/knockout_index.rst",
            category="Pass knockout",
            labels={"page": "index"},
        ),
        pages=directory(f"{KNOCKOUT_DIR}/pages"),
    log:
        "logs/knockout/knockout_pages.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        script=f"{SCRIPTS}/knockout_pages.py",
        runs=lambda wildcards, input: str(Path(input.records[0]).parents[3]),
        out_dir=lambda wildcards, output: str(Path(output.index).parent),
        figures=lambda wildcards, output: str(Path(output.index).parent / "figures"),
    shell:
        "exec python3 {params.script:q} --runs-dir {params.runs:q} --out-dir {params.out_dir:q}"
        " --figures-dir {params.figures:q} {input.records:q} {input.gpu:q} > {log:q} 2>&1"
