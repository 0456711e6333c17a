"""Real resource managers started on this machine for tests, demos and the sim-to-real tool: a Slurm controller
with several ``slurmd`` (:class:`LocalSlurm`) and a local Ray cluster of logical nodes (:class:`LocalRay`).

Slurm: Debian's ``slurm-wlm`` (22.05) runs one ``slurmctld`` and one ``slurmd`` per node on this host (each slurmd
on its own port, ``slurmd -N NAME``), with ``auth/none`` and ``cred/none`` (no munge daemon needed), GPUs declared
as generic resources backed by plain files (``File=DIR/gpus/NODE-gpuK``), all state in a temporary folder and
ports chosen free. :func:`slurm_missing` says why it cannot run (None when it can).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["LocalRay", "LocalSlurm", "ray_missing", "slurm_missing"]

_SLURM_BINARIES = ("slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "sinfo")


def _which(name: str) -> str | None:
    return shutil.which(name) or next((p for d in ("/usr/sbin", "/sbin") if os.access(p := f"{d}/{name}", os.X_OK)),
                                      None)


def slurm_missing() -> str | None:
    """Why :class:`LocalSlurm` cannot run here (a missing program, not root), or None."""
    gone = [b for b in _SLURM_BINARIES if _which(b) is None]
    if gone:
        return f"Slurm is not installed (missing {', '.join(gone)}; Debian: apt-get install slurm-wlm)"
    if os.geteuid() != 0:
        return "the local Slurm daemons need root here (slurmd runs jobs as their user)"
    if not Path("/usr/lib/x86_64-linux-gnu/slurm-wlm/auth_none.so").exists() and not any(
            Path(p).exists() for p in ("/usr/lib/slurm/auth_none.so", "/usr/lib64/slurm/auth_none.so")):
        return "this Slurm has no auth/none plugin (Slurm >= 23.11 removed it)"
    return None


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class LocalSlurm:
    """A Slurm cluster on this host: ``nodes`` maps node name -> (GPU type, GPUs); one partition ``schedopt``.
    ``env`` is what a client needs (``SLURM_CONF``). Use as a context manager, or :meth:`start` / :meth:`stop`."""

    def __init__(self, nodes: Mapping[str, tuple[str, int]], *, cpus_per_node: int = 16, root: str | None = None,
                 partition: str = "schedopt") -> None:
        self.nodes = dict(nodes)
        self.partition = partition
        self.cpus = cpus_per_node
        self.root = Path(root or tempfile.mkdtemp(prefix="schedopt-slurm-"))
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._procs: list[subprocess.Popen[bytes]] = []
        self.ports: dict[str, int] = {}

    def _write_conf(self) -> None:
        r = self.root
        for sub in ("state", "spool", "gpus", "log"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        ports = _free_ports(2 + len(self.nodes))
        self.ports = {"slurmctld": ports[0], "slurmd": ports[1]}
        lines = [
            "ClusterName=schedopt", "SlurmctldHost=localhost", f"SlurmctldPort={ports[0]}", f"SlurmdPort={ports[1]}",
            "AuthType=auth/none", "CredType=cred/none", "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool/%n", f"SlurmctldPidFile={r}/slurmctld.pid",
            f"SlurmdPidFile={r}/spool/slurmd-%n.pid", f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd-%n.log", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin", "SlurmdParameters=config_overrides", "GresTypes=gpu", "MpiDefault=none",
            "ReturnToService=1", "JobRequeue=1", "KillWait=2", "MinJobAge=3600", "SlurmdTimeout=10",
            "MessageTimeout=10", "BatchStartTimeout=120", "InactiveLimit=0", "SchedulerParameters=sched_interval=1,sched_min_interval=0",
        ]
        gres = []
        for k, (name, (gtype, gpus)) in enumerate(self.nodes.items()):
            self.ports[name] = ports[2 + k]
            lines.append(f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports[2 + k]} "
                         f"CPUs={self.cpus} Gres=gpu:{gpus} Feature={gtype} State=UNKNOWN")
            (r / "spool" / name).mkdir(exist_ok=True)
            for g in range(gpus):
                (r / "gpus" / f"{name}-gpu{g}").touch()
            gres.append(f"NodeName={name} Name=gpu File={r}/gpus/{name}-gpu[0-{gpus - 1}]" if gpus > 1
                        else f"NodeName={name} Name=gpu File={r}/gpus/{name}-gpu0")
        lines.append(f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        (r / "gres.conf").write_text("\n".join(gres) + "\n")

    def _spawn(self, argv: Sequence[str], log: str) -> subprocess.Popen[bytes]:
        out = open(self.root / "log" / log, "ab")
        p = subprocess.Popen(list(argv), env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        self._procs.append(p)
        return p

    def start_node(self, name: str) -> None:
        """Start (again) the slurmd of node ``name``."""
        self._spawn([_which("slurmd") or "slurmd", "-D", "-f", str(self.conf), "-N", name], f"slurmd-{name}.out")

    def start(self, timeout: float = 60.0) -> LocalSlurm:
        why = slurm_missing()
        if why:
            raise RuntimeError(why)
        self._write_conf()
        self._spawn([_which("slurmctld") or "slurmctld", "-D", "-i", "-f", str(self.conf)], "slurmctld.out")
        for name in self.nodes:
            self.start_node(name)
        self.wait_idle(timeout)
        return self

    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> str:
        """A Slurm client command against this cluster; its stdout."""
        got = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and got.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {got.returncode}: {got.stderr.strip()}")
        return got.stdout

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until every node is idle (or in use): slurmctld answers and every slurmd registered."""
        end = time.monotonic() + timeout
        last = ""
        while time.monotonic() < end:
            dead = [p.args for p in self._procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Slurm daemon exited: {dead}; logs in {self.root / 'log'}")
            try:
                last = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False, timeout=10)
            except subprocess.TimeoutExpired:
                continue
            states = dict(line.split() for line in last.splitlines() if line.strip())
            if set(states) == set(self.nodes) and all(s in ("idle", "mix", "alloc") for s in states.values()):
                return
            time.sleep(0.3)
        raise TimeoutError(f"Slurm nodes not idle after {timeout} s: {last!r}; logs in {self.root / 'log'}")

    def stop(self) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self._procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        self._procs.clear()
        # job scripts started by slurmd run in sessions of their own: end those this cluster started
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                env = (pid_dir / "environ").read_bytes()
            except OSError:
                continue
            if f"SLURM_CONF={self.conf}".encode() in env and int(pid_dir.name) != os.getpid():
                try:
                    os.kill(int(pid_dir.name), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def __enter__(self) -> LocalSlurm:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def ray_missing() -> str | None:
    """Why :class:`LocalRay` cannot run here (Ray not installed), or None."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed (pip install ray, or pip install -e '.[ray]' from a checkout)"
    return None


class LocalRay:
    """A local Ray cluster of logical nodes (``ray.cluster_utils.Cluster``): ``nodes`` maps node name -> (GPU type,
    GPUs); each node carries the custom resource ``schedopt-node-<name>`` (so a bundle can be pinned to it) and
    ``gpu-type-<type>``. The driver connects with ``ray.init(address=self.address)`` (what
    :class:`schedopt.live.ray.RayEngine` does)."""

    def __init__(self, nodes: Mapping[str, tuple[str, int]], *, cpus_per_node: int = 4) -> None:
        self.nodes = dict(nodes)
        self.cpus = cpus_per_node
        self.cluster: Any = None
        self.handles: dict[str, object] = {}
        self.address = ""

    def start(self) -> LocalRay:
        """Start the nodes (the first is the head); ``address`` is the cluster's (``ray.init(address=...)``)."""
        from ray.cluster_utils import Cluster

        cl = Cluster()
        for name, (gtype, gpus) in self.nodes.items():
            self.handles[name] = self._add(cl, name, gtype, gpus)
        self.cluster = cl
        self.address = str(cl.address)
        cl.wait_for_nodes()
        return self

    def _add(self, cl: Any, name: str, gtype: str, gpus: int) -> object:
        return cl.add_node(num_cpus=self.cpus, num_gpus=gpus,
                           resources={node_resource(name): 1000, f"gpu-type-{gtype}": gpus})

    def remove_node(self, name: str) -> None:
        """Take node ``name`` down (its raylet ends; its actors die)."""
        self.cluster.remove_node(self.handles.pop(name))

    def add_node(self, name: str) -> None:
        gtype, gpus = self.nodes[name]
        self.handles[name] = self._add(self.cluster, name, gtype, gpus)

    def stop(self) -> None:
        import ray

        ray.shutdown()
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = None

    def __enter__(self) -> LocalRay:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def node_resource(name: str) -> str:
    """The custom Ray resource that marks node ``name`` (``LocalRay`` gives each node 1000 of it)."""
    return f"schedopt-node-{name}"
