"""Getters of the GPU stage (gpu.smk): its paths, each release's GPU site, the jobs of the GPU's arch."""

import json


def gpu_site_args(version: str) -> list:
    """gpu_bench.py's --site of a release: none for the installed release; else the release's GPU site (TileLang
    and its pins without dependencies, put in front of the machine's CUDA torch; rule gpu_release_site)."""
    if GRID.release_env(version) is None:
        return []
    return ["--site", str(Path(GPU_SITE_MARKER.format(version=version)).parent.absolute())]


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
