"""schedopt's policies in charge of a Ray cluster (``schedopt.live.ray``; needs ``pip install 'schedopt[ray]'``,
imported only when used).

:class:`RayEngine` is the Ray side of the scheduling loop (:class:`schedopt.live.driver.LiveReplay`). A job is a
gang of actors, one per node of its plan, in a placement group whose bundles are pinned to the plan's nodes (each
node carries a custom resource naming it, ``schedopt.testing.local_engines.node_resource``) and hold the
plan's GPU count there; the first actor runs the training program (:func:`schedopt.live.trainer.run`) on the GPU
ids Ray gave every member (``ray.get_gpu_ids()``). A resize or move is a checkpoint (the program's stop call),
the gang killed, its placement group removed, and a new group and gang on the new nodes. A node that leaves the
cluster kills its actors: the job reads as failed, the loop holds it (its group removed) and places it again.
Nodes come from ``ray.nodes()`` (alive or not; GPU type from a ``gpu-type-<type>`` resource).
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .driver import EngineJob, EngineRefused, NodeInfo

__all__ = ["RayEngine"]

_NODE_PREFIX = "schedopt-node-"
_TYPE_PREFIX = "gpu-type-"


def _ray(module: str = "ray") -> Any:
    """``ray`` or one of its modules, as an untyped object (Ray is optional: its types do not enter ours)."""
    return importlib.import_module(module)


def _member_class() -> Any:
    ray = _ray()

    @ray.remote(num_cpus=0, max_concurrency=2)
    class GangMember:
        """One member of a job's gang: holds its bundle's GPUs; the first member also runs the program."""

        def __init__(self) -> None:
            import threading

            self._stop = threading.Event()

        def info(self) -> tuple[str, list[int]]:
            return ray.get_runtime_context().get_node_id(), [int(g) for g in ray.get_gpu_ids()]

        def train(self, job_dir: str, names: dict[str, str], *infos: tuple[str, list[int]]) -> str:
            from .trainer import run

            alloc = {names.get(nid, nid): gpus for nid, gpus in infos}
            return run(job_dir, alloc, source="ray", stop=self._stop)

        def stop(self) -> bool:
            self._stop.set()
            return True

    return GangMember


@dataclass
class _Gang:
    pg: Any
    members: list[Any]
    infos: list[Any]
    run: Any
    result: str | None = None
    nodes: dict[str, tuple[int, ...]] = field(default_factory=dict)


class RayEngine:
    """The loop's view of a Ray cluster (``address``: ``ray.init``'s; None: the running one or a new local one)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, tag: str = "run") -> None:
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
        self._cls = _member_class()

    def adopt(self, ids: Mapping[str, str], job_dirs: Mapping[str, Path]) -> None:
        """A restarted driver: Ray's actors belonged to the old driver and ended with it; every job of the run
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

        names = None
        out: dict[str, EngineJob] = {}
        for jid in self.dirs:
            g = self.gangs.get(jid)
            if jid in self.finished:
                out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "done")
                continue
            if g is None:
                out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "held")
                continue
            done, _ = ray.wait([g.run], timeout=0)
            if done:
                try:
                    g.result = ray.get(g.run)
                except Exception as exc:  # an actor died (its node left): the job failed
                    out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "failed", {}, f"{type(exc).__name__}")
                    continue
                if g.result == "finished":
                    self.finished.add(jid)
                    self._drop(jid)
                    out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "done")
                else:
                    out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "held")
                continue
            ready, _ = ray.wait(g.infos, num_returns=len(g.infos), timeout=0)
            if len(ready) < len(g.infos):
                out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "pending")
                continue
            if not g.nodes:
                try:
                    got = ray.get(g.infos)
                except Exception as exc:  # a member died before it started
                    out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "failed", {}, f"{type(exc).__name__}")
                    continue
                names = names or self._names()
                for nid, gpus in got:
                    g.nodes[names.get(nid, nid)] = tuple(sorted(gpus))
            out[jid] = EngineJob(jid, f"{self.tag}/{jid}", "running", dict(g.nodes))
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
        members = [self._cls.options(num_gpus=k, scheduling_strategy=strategy(
            placement_group=pg, placement_group_bundle_index=i)).remote() for i, (_, k) in enumerate(counts)]
        infos = [m.info.remote() for m in members]
        run = members[0].train.remote(str(d), self._names(), *infos)
        self.gangs[job_id] = _Gang(pg, members, infos, run)

    def _drop(self, job_id: str) -> None:
        ray = _ray()
        remove_placement_group = _ray("ray.util.placement_group").remove_placement_group

        g = self.gangs.pop(job_id, None)
        if g is None:
            return
        for m in g.members:
            try:
                ray.kill(m)
            except Exception:  # already dead
                pass
        try:
            remove_placement_group(g.pg)
        except Exception:  # already removed (its node died)
            pass

    def stop(self, job_ids: Sequence[str], timeout: float = 30.0) -> dict[str, str]:
        """Ask each job's program to checkpoint, wait for it, then kill its gang and remove its group."""
        ray = _ray()

        out: dict[str, str] = {}
        waiting = []
        for jid in job_ids:
            g = self.gangs.get(jid)
            if g is None:
                out[jid] = "not running"
                continue
            ready, _ = ray.wait(g.infos, num_returns=len(g.infos), timeout=0)
            if len(ready) == len(g.infos):
                try:
                    g.members[0].stop.remote()
                    waiting.append((jid, g.run))
                except Exception:  # the member died
                    pass
            out[jid] = "checkpoint+kill" if len(ready) == len(g.infos) else "kill (not started yet)"
        end = time.monotonic() + timeout
        for jid, ref in waiting:
            try:
                ray.get(ref, timeout=max(0.1, end - time.monotonic()))
            except Exception as exc:  # it died or did not answer: killed below
                out[jid] = f"kill ({type(exc).__name__})"
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
