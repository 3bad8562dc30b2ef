# The GPU stage (config gpu: true; scripts/tilelang_churn/gpu/gpu_bench.py): every configuration of the
# grid on each CUDA target of the visible GPU's arch is compiled with TileLang, checked against its kernel's
# reference and timed with CUDA events beside that reference; the rows are gathered and joined with the churn.
# Which jobs exist depends on the GPU, known only where it runs: checkpoint gpu_device describes it (or stops in
# one line when there is none, leaving every CPU result to complete under --keep-going).
# On Slurm the rules that touch the GPU request one (resources gpu=1 -> --gpus=1 of the executor plugin) and
# run apart from the CPU trace batches; locally `gpu` is not limited unless --resources gpu=N is given: jobs
# compile in parallel (nvcc-bound) and take a lock per GPU to launch, check and time one at a time.
checkpoint gpu_device:
    output:
        f"{GPU_DIR}/device.json",
    log:
        "logs/gpu/device.log",
    conda:
        "../envs/gpu.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=10,
    params:
        script=GPU_BENCH,
    shell:
        # no CUDA device: one line on stderr (and in the log) naming the device and the key, exit status 4
        "python3 {params.script:q} --probe --out {output:q} --log {log:q}"


# A release other than the installed one: TileLang and its pins without dependencies in a folder put on PYTHONPATH
# in front of the GPU machine's own Python and its CUDA torch (gpu/gpu_site.py). Local on a cluster, as
# release_env: pip needs the package index; the site lands in release_env_dir, on the shared filesystem.
rule gpu_release_site:
    output:
        GPU_SITE_MARKER,
    log:
        "logs/gpu/site-tilelang-{version}.log",
    localrule: True
    conda:
        "../envs/gpu.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        script=f"{SCRIPTS}/gpu_site.py",
        dest=lambda wildcards, output: str(Path(output[0]).parent),
        entry=release_env_args,
        # a rebuilt wheel (another sha256) rebuilds its site
        identity=lambda wildcards: GRID.entries[wildcards.version].identity,
    shell:
        "python3 {params.script:q} --version {wildcards.version:q} --dest {params.dest:q} {params.entry:q}"
        " > {log:q} 2>&1"


rule gpu_bench:
    input:
        device=f"{GPU_DIR}/device.json",
        # a user's kernel file: editing it reruns its GPU jobs
        kernel=lambda wc: gpu_kernel_file(wc.shape),
        site=gpu_site_marker,
    output:
        f"{GPU_DIR}/runs/{GPU_JOB}/speed.json",
    log:
        f"logs/gpu/{GPU_JOB}.log",
    # one nvcc per job (compile in parallel across the cores); the launch and timing wait for the GPU's lock
    conda:
        "../envs/gpu.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=15,
    params:
        script=GPU_BENCH,
        # the job's arguments, and for a release other than the installed one --site (its GPU site)
        args=lambda wc: [*GPU_JOBS[(wc.version, wc.target, wc.shape)], *gpu_site_args(wc.version)],
        gpu_seconds=config["gpu_timeout_s"],
        flush_l2="--flush-l2" if config["gpu_flush_l2"] else "--no-flush-l2",
        python=lambda wc: gpu_python(wc.version),
        identity=lambda wc: GRID.entries[wc.version].identity,
    shell:
        "{params.python:q} {params.script:q} {params.args:q} --gpu-seconds {params.gpu_seconds:q} {params.flush_l2:q}"
        " --out {output:q}"
        " > {log:q} 2>&1"


rule kernel_speed:
    input:
        speed=gpu_speed_files,
        summary="results/churn_summary.csv",
    output:
        speed=f"{GPU_DIR}/kernel_speed.csv",
        joined=f"{GPU_DIR}/churn_vs_speed.csv",
    log:
        "logs/gpu/kernel_speed.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        script=f"{SCRIPTS}/kernel_speed.py",
        mode=GPU_JOIN_MODE,
    shell:
        "python3 {params.script:q} --summary {input.summary:q} --mode {params.mode:q} --speed {output.speed:q}"
        " --joined {output.joined:q} {input.speed:q} > {log:q} 2>&1"


rule speed_figures:
    input:
        f"{GPU_DIR}/churn_vs_speed.csv",
    output:
        [
            report(
                f"{GPU_DIR}/figures/{kernel}.png",
                caption="../report/speed_figures.rst",
                category="GPU speed beside churn",
                labels={"kernel": kernel},
            )
            for kernel in GPU_KERNELS
        ],
        [f"{GPU_DIR}/figures/{kernel}.svg" for kernel in GPU_KERNELS],
    log:
        "logs/gpu/speed_figures.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        script=f"{SCRIPTS}/speed_figures.py",
        out_dir=lambda wildcards, output: str(Path(output[0]).parent),
        kernels=",".join(GPU_KERNELS),
    shell:
        "python3 {params.script:q} --joined {input:q} --out-dir {params.out_dir:q} --kernels {params.kernels:q}"
        " > {log:q} 2>&1"
