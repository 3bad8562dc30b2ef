"""A real one-node Slurm cluster on 127.0.0.1, for the tests: munged, slurmctld and slurmd as root.

Everything lives in one fresh folder (configuration, munge key and socket, state, spool, logs, pid files):
nothing under /etc is read or written, and free TCP ports are chosen, so a Slurm or munge already running on
the machine is neither used nor disturbed. The daemons run in the foreground as children of the test
process; `stop()` ends exactly those processes, by their ids.

    cluster = SlurmCluster(Path(tempfile.mkdtemp()))
    cluster.start()                  # SlurmSetupError naming the step that failed, with the daemon's log
    subprocess.run(["sbatch", ...], env=cluster.env())    # clients find the cluster through SLURM_CONF
    cluster.stop()

Configuration: select/cons_tres with cores and memory as consumables, accounting off (so `sacct` has
nothing to report: status queries go through `squeue`, which keeps finished jobs for MinJobAge seconds),
no cgroups (proctrack/pgid, task/none), the node's CPUs and memory as `slurmd -C` reports them.
Debian packages: slurm-wlm (slurmctld, slurmd, the clients) and munge.

Clients inside a job must find the configuration without SLURM_CONF: the executor's job step
(snakemake-executor-plugin-slurm-jobstep) removes every SLURM_* variable but the job's identity before it
calls `srun`, as on a real cluster, where each node has the configuration where clients look by default.
Here that is /run/slurm/conf (where a configless slurmd caches it; Slurm's clients look there after
/etc/slurm/slurm.conf): a link to this cluster's folder, made only when neither exists and removed by stop().
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PARTITION = "tlchurn"
CLUSTER_NAME = "tlchurn"
# finished jobs stay visible to squeue this long: the test reads their history after the run
MIN_JOB_AGE = 1800
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("munge", "unmunge", "sbatch", "squeue", "sinfo", "scontrol", "srun", "scancel")
# where Slurm's clients look for slurm.conf when SLURM_CONF is not set, in this order
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")
CONFIGLESS_DIR = Path("/run/slurm/conf")


class SlurmSetupError(RuntimeError):
    """The cluster could not be started: the message names the step, the command and what it printed."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as error:
        return f"({path}: {error})"
    return "\n".join(text[-lines:]) or f"({path} is empty)"


def missing_programs() -> list[str]:
    """The daemons and clients this cluster needs that are not on PATH (or in /usr/sbin)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=search) is None]


def _left_by_a_stopped_cluster(link: Path) -> bool:
    """LINK points at a test cluster's etc/ (its slurm.conf names its SlurmctldPidFile) whose slurmctld no longer
    runs: a test process killed before stop() left it."""
    conf = link / "slurm.conf"
    if not conf.is_file():
        return False
    found = re.search(r"^SlurmctldPidFile=(.+)$", conf.read_text(errors="replace"), re.MULTILINE)
    if found is None:
        return False
    try:
        pid = int(Path(found.group(1)).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return True  # no pid file, or no such process
    return False


class SlurmCluster:
    def __init__(self, root: Path, node_name: str | None = None):
        self.root = Path(root)
        self.node = node_name or socket.gethostname().split(".")[0]
        self.conf = self.root / "etc" / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket.2"
        self.logs = self.root / "log"
        self._processes: dict[str, subprocess.Popen] = {}
        self._linked_conf = False
        self._made_run_dir = False
        self._search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])

    # ------------------------------------------------------------------------------------------ helpers

    def env(self) -> dict:
        """The environment of a Slurm client (sbatch, squeue, Snakemake's executor) of this cluster."""
        env = dict(os.environ, SLURM_CONF=str(self.conf))
        env["PATH"] = self._search
        # an outer allocation's settings must not leak into this cluster's clients
        for name in list(env):
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SQUEUE_")) and name != "SLURM_CONF":
                del env[name]
        return env

    def _which(self, name: str) -> str:
        found = shutil.which(name, path=self._search)
        if found is None:
            raise SlurmSetupError(f"{name} is not installed (apt-get install slurm-wlm munge)")
        return found

    def run(self, *command: str, timeout: float = 30, check: bool = True, stdin: bytes | None = None):
        """A client command against this cluster; SlurmSetupError with its output when it fails."""
        argv = [self._which(command[0]), *command[1:]]
        try:
            proc = subprocess.run(argv, env=self.env(), capture_output=True, timeout=timeout, input=stdin)
        except subprocess.TimeoutExpired:
            raise SlurmSetupError(f"`{' '.join(command)}` did not return within {timeout} s") from None
        if check and proc.returncode != 0:
            raise SlurmSetupError(
                f"`{' '.join(command)}` exited with status {proc.returncode}: "
                f"{proc.stderr.decode(errors='replace').strip() or proc.stdout.decode(errors='replace').strip()}"
            )
        return proc

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.out", "wb")  # closed by stop()
        try:
            process = subprocess.Popen(argv, env=self.env(), stdout=log, stderr=subprocess.STDOUT)
        except OSError as error:
            log.close()
            raise SlurmSetupError(f"could not start {name} ({' '.join(argv)}): {error}") from None
        process.log_handle = log
        self._processes[name] = process
        return process

    def _wait(self, what: str, ready, timeout: float, daemon: str, log: Path) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            process = self._processes.get(daemon)
            if process is not None and process.poll() is not None:
                raise SlurmSetupError(
                    f"{daemon} exited with status {process.returncode} while waiting for {what}.\n"
                    f"--- {log} ---\n{_tail(log)}\n--- {self.logs / (daemon + '.out')} ---\n"
                    f"{_tail(self.logs / (daemon + '.out'))}"
                )
            if ready():
                return
            time.sleep(0.25)
        raise SlurmSetupError(
            f"timed out after {timeout} s waiting for {what}.\n{self.diagnosis()}--- {log} ---\n{_tail(log)}"
        )

    def diagnosis(self) -> str:
        """What slurmctld says about the node (state and reason), and the end of its log."""
        try:
            node = self.run("scontrol", "show", "node", self.node, check=False, timeout=10)
            said = (node.stdout + node.stderr).decode(errors="replace")
        except SlurmSetupError as error:
            said = str(error)
        state = " ".join(re.findall(r"\b(?:State|Reason)=\S+(?: [^=\n]*(?=\s|$))?", said)) or said.strip()
        ctld_log = self.logs / "slurmctld.log"
        return f"scontrol show node {self.node}: {state}\n--- {ctld_log} ---\n{_tail(ctld_log, 10)}\n"

    # ---------------------------------------------------------------------------------------- set-up

    def node_hardware(self) -> tuple[int, int]:
        """(CPUs, RealMemory in MB) of this machine, as slurmd itself detects them."""
        proc = subprocess.run([self._which("slurmd"), "-C"], capture_output=True, text=True, timeout=30)
        cpus = re.search(r"\bCPUs=(\d+)", proc.stdout)
        memory = re.search(r"\bRealMemory=(\d+)", proc.stdout)
        if proc.returncode != 0 or not cpus or not memory:
            raise SlurmSetupError(f"`slurmd -C` did not report CPUs and RealMemory: {proc.stdout}{proc.stderr}")
        # a little below what slurmd measures, so the node is never drained for having less than configured
        return int(cpus.group(1)), int(int(memory.group(1)) * 0.9)

    def write_config(self) -> None:
        cpus, memory = self.node_hardware()
        for folder in ("etc", "munge", "state", "spool", "log"):
            (self.root / folder).mkdir(mode=0o700, parents=True, exist_ok=True)
        ctld_port, slurmd_port = _free_port(), _free_port()
        self.conf.write_text(
            "\n".join(
                [
                    "# written by tests/slurm_cluster.py: a one-node cluster on 127.0.0.1, accounting off",
                    f"ClusterName={CLUSTER_NAME}",
                    f"SlurmctldHost={self.node}(127.0.0.1)",
                    f"SlurmctldPort={ctld_port}",
                    f"SlurmdPort={slurmd_port}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    f"StateSaveLocation={self.root / 'state'}",
                    f"SlurmdSpoolDir={self.root / 'spool'}",
                    f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
                    f"SlurmdPidFile={self.root / 'slurmd.pid'}",
                    f"SlurmctldLogFile={self.logs / 'slurmctld.log'}",
                    f"SlurmdLogFile={self.logs / 'slurmd.log'}",
                    "SlurmctldDebug=info",
                    "SlurmdDebug=info",
                    "ProctrackType=proctrack/pgid",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "JobCompType=jobcomp/none",
                    "SwitchType=switch/none",
                    "MpiDefault=none",
                    "SchedulerType=sched/builtin",
                    "MailProg=/bin/true",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core_Memory",
                    "DefMemPerCPU=1000",
                    f"MinJobAge={MIN_JOB_AGE}",
                    "ReturnToService=2",
                    "InactiveLimit=0",
                    "KillWait=5",
                    "Waittime=0",
                    f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN",
                    f"PartitionName={PARTITION} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )
        # read by slurmd when a cgroup plugin is loaded; none is here, the file says so explicitly
        (self.conf.parent / "cgroup.conf").write_text("CgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n")

    def link_client_config(self) -> None:
        """/run/slurm/conf -> this cluster's etc/: what `srun` inside a job reads (the job step drops SLURM_CONF)."""
        if DEFAULT_CONF.exists():
            raise SlurmSetupError(
                f"{DEFAULT_CONF} exists: Slurm clients inside a job (the executor's srun, which drops SLURM_CONF) "
                "would read it instead of this test cluster's configuration"
            )
        if CONFIGLESS_DIR.is_symlink() and (not CONFIGLESS_DIR.exists() or _left_by_a_stopped_cluster(CONFIGLESS_DIR)):
            CONFIGLESS_DIR.unlink()  # left by a test cluster that was killed; it serves nobody
        if CONFIGLESS_DIR.exists():
            raise SlurmSetupError(
                f"{CONFIGLESS_DIR} exists (a configless slurmd on this machine?): Slurm clients inside a job would "
                "read it instead of this test cluster's configuration"
            )
        try:
            if not CONFIGLESS_DIR.parent.exists():
                CONFIGLESS_DIR.parent.mkdir(parents=True)
                self._made_run_dir = True
            CONFIGLESS_DIR.symlink_to(self.conf.parent, target_is_directory=True)
        except OSError as error:
            raise SlurmSetupError(f"could not link {CONFIGLESS_DIR} to {self.conf.parent}: {error}") from None
        self._linked_conf = True

    def start_munge(self) -> None:
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        munge_dir = self.root / "munge"
        self._start(
            "munged",
            [
                self._which("munged"),
                "--foreground",
                "--force",  # root, and a key outside /etc/munge
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
                f"--log-file={self.logs / 'munged.log'}",
            ],
        )
        self._wait("munged's socket", self.munge_socket.exists, 20, "munged", self.logs / "munged.log")
        credential = self.run("munge", "-n", "-S", str(self.munge_socket))
        self.run("unmunge", "-S", str(self.munge_socket), stdin=credential.stdout)

    def start_slurmctld(self) -> None:
        self._start("slurmctld", [self._which("slurmctld"), "-D", "-i", "-f", str(self.conf)])

        def up() -> bool:
            proc = self.run("scontrol", "ping", check=False, timeout=10)
            return proc.returncode == 0 and b"UP" in proc.stdout

        self._wait("slurmctld to answer `scontrol ping`", up, 60, "slurmctld", self.logs / "slurmctld.log")

    def node_state(self) -> str:
        proc = self.run("sinfo", "--noheader", "--Node", "--format=%T", "--nodes", self.node, check=False)
        return proc.stdout.decode(errors="replace").strip().lower()

    def start_slurmd(self) -> None:
        self._start("slurmd", [self._which("slurmd"), "-D", "-N", self.node, "-f", str(self.conf)])
        self._wait(
            f"node {self.node} to be idle (sinfo)",
            lambda: self.node_state() == "idle",
            60,
            "slurmd",
            self.logs / "slurmd.log",
        )

    def check_a_job_runs(self) -> None:
        """sbatch --wait of a job that runs srun: the node runs batch jobs and their steps find the cluster."""
        out = self.root / "smoke.out"
        self.run(
            "sbatch",
            "--wait",
            "--parsable",
            "--job-name=smoke",
            f"--output={out}",
            "--ntasks=1",
            "--mem=100",
            "--time=1",
            "--wrap",
            # as the executor's job step calls it: without SLURM_CONF
            "env -u SLURM_CONF srun --ntasks=1 echo smoke-ok",
            timeout=120,
        )
        if "smoke-ok" not in (out.read_text(errors="replace") if out.exists() else ""):
            raise SlurmSetupError(
                f"the test job ran but did not print smoke-ok (its output: {_tail(out)})\n"
                f"--- slurmd.log ---\n{_tail(self.logs / 'slurmd.log')}"
            )

    def start(self) -> None:
        """Start munged, slurmctld and slurmd and run one job; on any failure, stop what was started."""
        if os.geteuid() != 0:
            raise SlurmSetupError("the daemons must run as root (SlurmUser=root, munged --force)")
        missing = missing_programs()
        if missing:
            raise SlurmSetupError(f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)")
        try:
            self.write_config()
            self.link_client_config()
            self.start_munge()
            self.start_slurmctld()
            self.start_slurmd()
            self.check_a_job_runs()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """End the daemons this object started (by their process ids, newest first), and only those."""
        ctld = self._processes.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            # jobs still queued or running on this private cluster (a run that failed half-way) go first
            try:
                self.run("scancel", "--full", "--state=PENDING", check=False, timeout=10)
                self.run("scancel", "--full", "--state=RUNNING", check=False, timeout=10)
            except SlurmSetupError:
                pass
        for name in reversed(list(self._processes)):
            process = self._processes.pop(name)
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            process.log_handle.close()
        if self._linked_conf and CONFIGLESS_DIR.is_symlink() and CONFIGLESS_DIR.readlink() == self.conf.parent:
            CONFIGLESS_DIR.unlink()
        if self._made_run_dir and CONFIGLESS_DIR.parent.is_dir() and not any(CONFIGLESS_DIR.parent.iterdir()):
            CONFIGLESS_DIR.parent.rmdir()
        self._linked_conf = self._made_run_dir = False

    # --------------------------------------------------------------------------------------- queries

    def jobs(self) -> list[dict]:
        """Every job slurmctld still knows (running or finished within MinJobAge): id, name, state, comment."""
        proc = self.run("squeue", "--states=all", "--noheader", "--format=%i|%j|%T|%k")
        jobs = []
        for line in proc.stdout.decode(errors="replace").splitlines():
            job_id, name, state, comment = (line.split("|", 3) + ["", "", ""])[:4]
            jobs.append({"id": job_id.strip(), "name": name.strip(), "state": state.strip(), "comment": comment})
        return jobs
