"""schedopt's policies in charge of a Ray cluster (``schedopt.live.ray``; needs Ray: ``pip install -e '.[ray]'`` from
a checkout; imported only when used).

:class:`RayEngine` is the Ray side of the scheduling loop (:class:`schedopt.live.driver.LiveReplay`). A job is a
gang of Ray tasks, one per node of its plan, in a placement group whose bundles are pinned to the plan's nodes
(each node carries a custom resource naming it, ``schedopt.testing.local_engines.node_resource``) and hold the
plan's GPU count there. Every member writes the node and the GPU ids Ray gave it (``ray.get_gpu_ids()``) to the
job folder (``gang/<token>-<k>.json``); the first member runs the training program
(:func:`schedopt.live.trainer.run`) on them once the whole gang is placed, the others hold their GPUs until it
ends. A resize or move is a checkpoint (the driver's stop request, ``gang/<token>.stop``, read by the program at
every tick), the gang's end, its placement group removed, and a new group and gang on the new nodes. A node that
leaves the cluster kills its members: the job reads as failed, the loop holds it (its group removed) and places it
again. Nodes come from ``ray.nodes()`` (alive or not; GPU type from a ``gpu-type-<type>`` resource).

The members are tasks, not actors, so that Ray's worker pool runs them: a worker whose member ended takes the next
member on its node with the program already imported, instead of a new process per start (an actor's worker
process ends with the actor). With ``prestart`` the engine fills each node's pool once, before the run, with one
worker per GPU that has imported the program (Ray's own workers, started by Ray; the first start on a node then
costs no process start either).
"""

from __future__ import annotations

import importlib
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .driver import EngineJob, EngineRefused, NodeInfo
from .trainer import read_json, write_json

__all__ = ["RayEngine", "gang_member"]

_NODE_PREFIX = "schedopt-node-"
_TYPE_PREFIX = "gpu-type-"
_POLL = 0.02  # wall seconds between two looks of a waiting member at the job folder


def _ray(module: str = "ray") -> Any:
    """``ray`` or one of its modules, as an untyped object (Ray is optional: its types do not enter ours)."""
    return importlib.import_module(module)


class _StopFile(threading.Event):
    """The program's stop request: set by the driver's ``gang/<token>.stop`` file (looked at every tick)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def is_set(self) -> bool:
        return super().is_set() or self.path.exists()

    def wait(self, timeout: float | None = None) -> bool:
        if self.is_set():
            return True
        super().wait(timeout)
        return self.is_set()


def gang_member(job_dir: str, token: str, index: int, size: int, names: Mapping[str, str], node_id: str,
                gpus: Sequence[int]) -> str:
    """One member of a job's gang (run in a Ray task on its bundle): write the node and GPUs Ray gave it to
    ``JOB_DIR/gang/<token>-<index>.json``; member 0 then waits for the whole gang and runs the program on it
    (``"finished"`` or ``"checkpointed"``; ``"stopped"`` when stopped before the gang was complete), the others
    hold their GPUs until member 0 has ended (``"member"``)."""
    from .trainer import run

    d = Path(job_dir) / "gang"
    d.mkdir(parents=True, exist_ok=True)
    write_json(d / f"{token}-{index}.json", {"node": names.get(node_id, node_id), "node_id": node_id,
                                               "gpus": [int(g) for g in gpus], "pid": os.getpid(),
                                               "wall": time.time()})
    stop, end = d / f"{token}.stop", d / f"{token}.end"
    if index:
        while not end.exists():
            time.sleep(_POLL)
        return "member"
    try:
        while True:  # the program starts once the whole gang holds its GPUs
            members = [read_json(d / f"{token}-{k}.json") for k in range(size)]
            if all(m is not None for m in members):
                break
            if stop.exists():
                return "stopped"
            time.sleep(_POLL)
        alloc = {str(m["node"]): [int(g) for g in m["gpus"]] for m in members if m is not None}
        return run(job_dir, alloc, source="ray", stop=_StopFile(stop))
    finally:
        write_json(end, {"wall": time.time()})


def _warm(barrier: str, size: int) -> int:
    """A prestart task: import the program, then wait until ``size`` tasks have (each on its own worker)."""
    from ..sim import jobs  # noqa: F401
    from . import trainer  # noqa: F401

    d = Path(barrier)
    (d / f"{os.getpid()}-{uuid.uuid4().hex[:8]}").touch()
    end = time.monotonic() + 600
    while len(list(d.iterdir())) < size and time.monotonic() < end:
        time.sleep(_POLL)
    return os.getpid()


def _remote_functions() -> tuple[Any, Any]:
    ray = _ray()

    # max_calls=0: a worker runs any number of members (Ray's default for a GPU task is one, then a new process)
    @ray.remote(num_cpus=0, num_gpus=0, max_calls=0, max_retries=0)
    def member(job_dir: str, token: str, index: int, size: int, names: dict[str, str]) -> str:
        node = ray.get_runtime_context().get_node_id()
        return gang_member(job_dir, token, index, size, names, node, ray.get_gpu_ids())

    @ray.remote(num_cpus=0, num_gpus=0, max_calls=0, max_retries=0)
    def warm(barrier: str, size: int) -> int:
        return _warm(barrier, size)

    return member, warm


@dataclass
class _Gang:
    pg: Any
    token: str
    dir: Path
    refs: list[Any]  # the members' tasks; refs[0] runs the program
    result: str | None = None
    nodes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def placed(self) -> dict[str, tuple[int, ...]] | None:
        """Node -> GPU ids of every member, once all of them have written theirs (None before)."""
        if not self.nodes:
            got = [read_json(self.dir / "gang" / f"{self.token}-{k}.json") for k in range(len(self.refs))]
            if any(m is None for m in got):
                return None
            self.nodes = {str(m["node"]): tuple(sorted(int(g) for g in m["gpus"])) for m in got if m is not None}
        return self.nodes


class RayEngine:
    """The loop's view of a Ray cluster (``address``: ``ray.init``'s; None: the running one or a new local one)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, tag: str = "run", prestart: bool = True) -> None:
        ray = _ray()

        if not ray.is_initialized():
            root = str(Path(__file__).resolve().parents[2])
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                         p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}})
        self.tag = tag
        self.dirs: dict[str, Path] = {}
        self.gangs: dict[str, _Gang] = {}
        self.finished: set[str] = set()
        self._member, self._warm = _remote_functions()
        self.prestarted = self.prestart() if prestart else {}

    def prestart(self, timeout: float = 600.0) -> dict[str, list[int]]:
        """Fill every alive node's worker pool with one worker per GPU that has imported the program: one task per
        GPU in a placement group of one-GPU bundles on the node (members run in groups; in Ray 2.60 workers warmed
        by tasks outside a group were not reused for members), all of a node's tasks at once, so each runs on a
        worker of its own; node -> the workers' process ids. Ray keeps an idle worker while the node has no more workers
        than CPUs."""
        import tempfile

        ray = _ray()
        pgs = _ray("ray.util.placement_group")
        strategy = _ray("ray.util.scheduling_strategies").PlacementGroupSchedulingStrategy
        out: dict[str, list[int]] = {}
        refs: dict[str, list[Any]] = {}
        groups = []
        with tempfile.TemporaryDirectory(prefix="schedopt-ray-prestart-") as tmp:
            try:
                for name, info in self.nodes().items():
                    if not info.up or not info.gpus:
                        continue
                    barrier = Path(tmp) / name
                    barrier.mkdir()
                    pg = pgs.placement_group([{"GPU": 1, f"{_NODE_PREFIX}{name}": 0.001}] * info.gpus,
                                             strategy="STRICT_PACK", name=f"schedopt-{self.tag}-prestart-{name}")
                    groups.append(pg)
                    refs[name] = [self._warm.options(num_gpus=1, scheduling_strategy=strategy(
                        placement_group=pg, placement_group_bundle_index=i)).remote(str(barrier), info.gpus)
                        for i in range(info.gpus)]
                every = [r for rs in refs.values() for r in rs]
                # (GPUs in use elsewhere: what could start is warm; the rest is given up)
                _, rest = ray.wait(every, num_returns=len(every), timeout=timeout)
                for name, rs in refs.items():
                    out[name] = sorted(int(ray.get(r)) for r in rs if r not in rest)
            finally:
                for pg in groups:
                    pgs.remove_placement_group(pg)
        return out

    def adopt(self, ids: Mapping[str, str], job_dirs: Mapping[str, Path]) -> None:
        """A restarted driver: Ray's tasks belonged to the old driver and ended with it; every job of the run
        starts again from its checkpoint (held until the loop places it)."""
        for jid in ids:
            self.dirs.setdefault(jid, job_dirs[jid])

    def _names(self) -> dict[str, str]:
        ray = _ray()

        out = {}
        for n in ray.nodes():
            names = [k[len(_NODE_PREFIX):] for k in n.get("Resources", {}) if k.startswith(_NODE_PREFIX)]
            out[n["NodeID"]] = names[0] if names else n["NodeID"][:12]
        return out

    def nodes(self) -> dict[str, NodeInfo]:
        ray = _ray()

        out: dict[str, NodeInfo] = {}
        for n in ray.nodes():
            res = n.get("Resources", {})
            names = [k[len(_NODE_PREFIX):] for k in res if k.startswith(_NODE_PREFIX)]
            if not names and not n.get("Alive"):
                continue  # a dead node Ray no longer describes: the loop sees it gone
            name = names[0] if names else n["NodeID"][:12]
            types = [k[len(_TYPE_PREFIX):] for k in res if k.startswith(_TYPE_PREFIX)]
            gpus = int(res.get("GPU", 0))
            if not gpus and not n.get("Alive"):
                prev = out.get(name)
                gpus = prev.gpus if prev else 0
            info = NodeInfo(name, types[0] if types else "gpu", gpus, bool(n.get("Alive")))
            if name not in out or info.up:  # a node that came back after it died is listed twice
                out[name] = info
        for name, info in list(out.items()):
            if not info.up and not info.gpus:
                alive = [i for i in out.values() if i.gpu_type == info.gpu_type and i.gpus]
                out[name] = NodeInfo(name, info.gpu_type, alive[0].gpus if alive else 0, False)
        return out

    def submit(self, job_id: str, job_dir: Path) -> str:
        self.dirs[job_id] = job_dir
        return f"{self.tag}/{job_id}"

    def jobs(self) -> dict[str, EngineJob]:
        ray = _ray()

        out: dict[str, EngineJob] = {}
        for jid in self.dirs:
            g = self.gangs.get(jid)
            eid = f"{self.tag}/{jid}"
            if jid in self.finished:
                out[jid] = EngineJob(jid, eid, "done")
                continue
            if g is None:
                out[jid] = EngineJob(jid, eid, "held")
                continue
            done, _ = ray.wait(g.refs[:1], timeout=0)
            if done:
                try:
                    g.result = ray.get(g.refs[0])
                except Exception as exc:  # a member's worker died (its node left): the job failed
                    out[jid] = EngineJob(jid, eid, "failed", {}, f"{type(exc).__name__}")
                    continue
                if g.result == "finished":
                    self.finished.add(jid)
                    self._drop(jid)
                    out[jid] = EngineJob(jid, eid, "done")
                else:
                    out[jid] = EngineJob(jid, eid, "held")
                continue
            nodes = g.placed()
            out[jid] = EngineJob(jid, eid, "pending") if nodes is None else EngineJob(jid, eid, "running",
                                                                                          dict(nodes))
        return out

    def start(self, job_id: str, nodes: Mapping[str, int]) -> None:
        placement_group = _ray("ray.util.placement_group").placement_group
        strategy = _ray("ray.util.scheduling_strategies").PlacementGroupSchedulingStrategy

        if job_id in self.gangs:
            raise EngineRefused(job_id, "start", "the job's previous gang is still there")
        d = self.dirs.get(job_id)
        if d is None:
            raise EngineRefused(job_id, "start", "never submitted")
        counts = [(n, int(k)) for n, k in sorted(nodes.items()) if k]
        try:
            pg = placement_group([{"GPU": k, f"{_NODE_PREFIX}{n}": 0.001} for n, k in counts], strategy="PACK",
                                 name=f"schedopt-{self.tag}-{job_id}")
        except Exception as exc:  # Ray refused the group (e.g. no such resource)
            raise EngineRefused(job_id, "start", f"placement group: {exc}") from None
        token = uuid.uuid4().hex[:12]
        (d / "gang").mkdir(parents=True, exist_ok=True)
        names = self._names()
        refs = [self._member.options(num_gpus=k, scheduling_strategy=strategy(
            placement_group=pg, placement_group_bundle_index=i)).remote(str(d), token, i, len(counts), names)
            for i, (_, k) in enumerate(counts)]
        self.gangs[job_id] = _Gang(pg, token, d, refs)

    def _drop(self, job_id: str) -> None:
        ray = _ray()
        remove_placement_group = _ray("ray.util.placement_group").remove_placement_group

        g = self.gangs.pop(job_id, None)
        if g is None:
            return
        try:
            remove_placement_group(g.pg)  # (ends the members still running in it)
        except Exception:  # already removed (its node died)
            pass
        _, running = ray.wait(g.refs, num_returns=len(g.refs), timeout=0)
        for r in running:
            try:
                ray.cancel(r, force=True)
            except Exception:  # its worker is gone already
                pass

    def stop(self, job_ids: Sequence[str], timeout: float = 30.0) -> dict[str, str]:
        """Ask each job's program to checkpoint (its stop file), wait until its gang has ended (the members'
        workers go back to Ray's pool), then remove its group."""
        ray = _ray()

        out: dict[str, str] = {}
        waiting = []
        for jid in job_ids:
            g = self.gangs.get(jid)
            if g is None:
                out[jid] = "not running"
                continue
            write_json(g.dir / "gang" / f"{g.token}.stop", {"wall": time.time()})
            waiting.append(jid)
            out[jid] = "checkpoint" if g.placed() is not None else "stop (not started yet)"
        end = time.monotonic() + timeout
        for jid in waiting:
            g = self.gangs[jid]
            left = max(0.1, end - time.monotonic())
            done, _ = ray.wait(g.refs, num_returns=len(g.refs), timeout=left)
            if len(done) < len(g.refs):
                out[jid] += " + kill"
        for jid in job_ids:
            self._drop(jid)
        return out

    def hold(self, job_id: str) -> None:
        self._drop(job_id)

    def cancel_all(self) -> None:
        for jid in list(self.gangs):
            self._drop(jid)

    def close(self) -> None:
        self.cancel_all()
