"""Getters of the GPU stage (gpu.smk): its paths, each release's GPU site, the jobs of the GPU's arch."""

import json


def has_gpu_site(version: str) -> bool:
    """Whether a version's GPU jobs run with a GPU site: a release other than the installed one, a wheel; not an
    environment entry, whose own interpreter (and its torch) runs them."""
    return GRID.builds_environment(version)


def gpu_site_args(version: str) -> list:
    """gpu_bench.py's --site of a version: the release's or wheel's GPU site (TileLang and its pins without
    dependencies, put in front of the machine's CUDA torch; rule gpu_release_site); none for the installed release
    and an environment entry."""
    if not has_gpu_site(version):
        return []
    return ["--site", str(Path(GPU_SITE_MARKER.format(version=version)).parent.absolute())]


def gpu_site_marker(wildcards) -> list:
    """The GPU site marker a GPU job of a version waits for (gpu_site_args), none without a site."""
    return [GPU_SITE_MARKER.format(version=wildcards.version)] if has_gpu_site(wildcards.version) else []


def gpu_python(version: str) -> list:
    """The interpreter of a version's GPU jobs: python3 (the workflow's), or an environment entry's own, started
    as its trace jobs are (release_process.environment_command)."""
    entry = GRID.entries[version]
    if entry.kind != "python":
        return ["python3"]
    return release_process.environment_command(entry.python)


def gpu_kernel_file(configuration: str) -> list:
    """The user's kernel file of a configuration and the modules it imports from its folder (inputs of its GPU
    jobs), none for the GEMM or a shipped kernel."""
    config_ = GRID.kernel_configs.get(configuration)
    return kernels.kernel_files_of([config_.source]) if config_ is not None and config_.user_file else []


GPU_SITE_MARKER = f"{GRID.release_env_dir}/gpu/tilelang-{{version}}/gpu_site.json"
GPU_DIR = jobs.GPU_DIR
GPU_JOB = jobs.GPU_JOB  # the config check knows the length of each file name it makes
GPU_BENCH = f"{SCRIPTS}/gpu_bench.py"


def gpu_device_arch() -> str:
    """The arch of the GPU the checkpoint found (sm_90)."""
    with open(checkpoints.gpu_device.get().output[0]) as handle:
        return json.load(handle)["gpu_arch"]


def gpu_speed_files(wildcards) -> list:
    """speed.json of every GPU job of the GPU's arch (after the checkpoint ran)."""
    return [
        f"{GPU_DIR}/runs/{version}/{target}/{shape}/speed.json"
        for version, target, shape in gpu_bench.gpu_jobs(GRID, gpu_device_arch())
    ]


GPU_JOBS = gpu_bench.gpu_jobs(GRID)  # every CUDA target's: the rule's params look a job up here


def get_knockout_gpu_records(wildcards) -> list:
    """knockout_gpu.json of every knockout configuration on a CUDA target of the GPU's arch (with gpu: true and
    config knockout; after the checkpoint ran), none otherwise."""
    if not (config["gpu"] and GRID.knockout):
        return []
    return [
        f"{jobs.KNOCKOUT_DIR}/gpu/{version}/{target}/{shape}/knockout_gpu.json"
        for version, target, shape in gpu_bench.gpu_jobs(GRID, gpu_device_arch())
    ]


def get_knockout_gpu_tables(wildcards) -> list:
    """The knockout_gpu.csv beside each knockout_gpu.json (get_knockout_gpu_records): read by the same readers."""
    return [path.replace("knockout_gpu.json", "knockout_gpu.csv") for path in get_knockout_gpu_records(wildcards)]
