"""schedopt's policies in charge of a real Slurm controller (``schedopt.live.slurm``).

:class:`SlurmEngine` is the Slurm side of the scheduling loop (:class:`schedopt.live.driver.LiveReplay`), with
Slurm's own commands and JSON output (Debian's ``slurm-wlm`` 22.05 has no REST daemon package; ``sinfo --json``
and ``squeue --json`` are there, ``scontrol show --json`` is not):

* nodes, their GPUs and health: ``sinfo --json`` (a node is up when it is idle, mixed, allocated or completing and
  not drained); the GPU type is the node's first feature;
* jobs: ``squeue --json --states=all`` (held, pending, running, completing, done), the GPU indices each node gave
  from ``gres_detail``;
* submit: ``sbatch --hold --requeue`` of the training program (:mod:`schedopt.live.trainer`) in the loop's
  partition; a job waits held until the loop starts it;
* start: ``scontrol update JobId=.. NumNodes=.. ReqNodeList=.. TresPerNode=gres:gpu:k`` (the same count on every
  node; ``TresPerJob=gres:gpu:N`` when the plan's counts differ), then ``scontrol release``;
* preempt, resize, move: ``scontrol requeuehold`` (Slurm signals the program, which checkpoints; the job waits
  held), then a start on the new GPUs;
* what Slurm refuses (a non-zero exit) is raised as :class:`~schedopt.live.driver.EngineRefused` naming the job
  and the reason; the loop records it and tries again the next round.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .driver import EngineJob, EngineRefused, NodeInfo
from .trainer import expand_hostlist
from .trainer import gres_indices as _gres_indices

__all__ = ["SlurmEngine", "expand_hostlist"]

_UP = {"idle", "mixed", "allocated", "completing"}
_STATES = {"PENDING": "pending", "RUNNING": "running", "COMPLETING": "stopping", "CONFIGURING": "running",
           "COMPLETED": "done", "CANCELLED": "failed", "FAILED": "failed", "TIMEOUT": "failed",
           "NODE_FAIL": "failed", "PREEMPTED": "pending", "BOOT_FAIL": "failed", "OUT_OF_MEMORY": "failed",
           "REQUEUED": "pending", "SUSPENDED": "stopping", "DEADLINE": "failed"}


class SlurmEngine:
    """The loop's view of a Slurm controller. ``env``: the environment of Slurm's commands (``SLURM_CONF``);
    ``partition``: the partition the loop owns; ``tag``: the run's tag in every job name (jobs of other runs are
    ignored)."""

    name = "slurm"

    def __init__(self, env: Mapping[str, str] | None = None, *, partition: str = "schedopt", tag: str = "run",
                 python: str = sys.executable, timeout: float = 30.0) -> None:
        self.env = dict(os.environ if env is None else env)
        pkg_root = str(Path(__file__).resolve().parents[2])
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, self.env.get("PYTHONPATH", "")) if p)
        self.partition, self.tag, self.python, self.timeout = partition, tag, python, timeout
        self.ids: dict[str, str] = {}  # job id -> Slurm job id

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=self.timeout)

    def _must(self, job_id: str, action: str, *argv: str) -> str:
        got = self._run(*argv)
        if got.returncode != 0:
            raise EngineRefused(job_id, action, f"{' '.join(argv[:2])}: {got.stderr.strip() or got.stdout.strip()}")
        return got.stdout

    def adopt(self, ids: Mapping[str, str], job_dirs: Mapping[str, Path]) -> None:
        """Take over the jobs of a run whose driver restarted (job id -> Slurm job id); they kept running."""
        self.ids.update(ids)

    def nodes(self) -> dict[str, NodeInfo]:
        got = self._run("sinfo", "--json")
        if got.returncode != 0:
            raise RuntimeError(f"sinfo --json: {got.stderr.strip()}")
        out: dict[str, NodeInfo] = {}
        for n in json.loads(got.stdout)["nodes"]:
            if self.partition not in (n.get("partitions") or [self.partition]):
                continue
            gres = str(n.get("gres") or "")
            gpus = 0
            for g in gres.split(","):
                parts = g.split("(")[0].split(":")
                if parts[0] == "gpu" and parts[-1].isdigit():
                    gpus += int(parts[-1])
            flags = {str(f).upper() for f in n.get("state_flags") or []}
            up = str(n.get("state", "")).lower() in _UP and not flags & {"DRAIN", "NOT_RESPONDING", "FAIL",
                                                                            "POWERED_DOWN", "REBOOT_REQUESTED"}
            feats = str(n.get("features") or n.get("active_features") or "").split(",")
            out[n["name"]] = NodeInfo(n["name"], feats[0] or "gpu", gpus, up)
        return out

    def submit(self, job_id: str, job_dir: Path) -> str:
        if job_id in self.ids:
            return self.ids[job_id]
        name = f"schedopt-{self.tag}-{job_id}"
        got = self._run("squeue", "-h", "--states=all", "-n", name, "-o", "%i")
        have = got.stdout.split() if got.returncode == 0 else []
        if have:  # submitted by a driver killed before it saved: the same job, not a second one
            self.ids[job_id] = have[0]
            return have[0]
        out = self._must(job_id, "submit", "sbatch", "--hold", "--parsable", "--requeue", "-p", self.partition,
                         "-J", name, "-o", str(job_dir / "slurm-%j.out"),
                         "--chdir", str(job_dir), "--open-mode=append",
                         "--wrap", f"exec {self.python} -m schedopt.live.trainer {job_dir}")
        sid = out.strip().split(";")[0]
        self.ids[job_id] = sid
        return sid

    def jobs(self) -> dict[str, EngineJob]:
        got = self._run("squeue", "--json", "--states=all")
        if got.returncode != 0:
            raise RuntimeError(f"squeue --json: {got.stderr.strip()}")
        by_sid = {v: k for k, v in self.ids.items()}
        out: dict[str, EngineJob] = {}
        for j in json.loads(got.stdout)["jobs"]:
            jid = by_sid.get(str(j["job_id"]))
            if jid is None:
                continue
            st = _STATES.get(str(j["job_state"]), "pending")
            reason = str(j.get("state_reason") or "")
            if st == "pending" and (int(j.get("priority") or 0) == 0 or "held" in reason.lower()
                                    or reason.startswith("JobHeld")):
                st = "held"
            nodes: dict[str, tuple[int, ...]] = {}
            if st in ("running", "stopping") and j.get("nodes"):
                names = expand_hostlist(str(j["nodes"]))
                details = list(j.get("gres_detail") or [])
                for k, n in enumerate(names):
                    nodes[n] = _gres_indices(details[k]) if k < len(details) else ()
            out[jid] = EngineJob(jid, str(j["job_id"]), st, nodes, reason)
        return out

    def start(self, job_id: str, nodes: Mapping[str, int]) -> None:
        sid = self.ids.get(job_id)
        if sid is None:
            raise EngineRefused(job_id, "start", "never submitted")
        counts = {n: int(g) for n, g in nodes.items() if g}
        tres = (f"TresPerNode=gres:gpu:{next(iter(counts.values()))}" if len(set(counts.values())) == 1
                else f"TresPerJob=gres:gpu:{sum(counts.values())}")
        self._must(job_id, "start", "scontrol", "update", f"JobId={sid}", f"NumNodes={len(counts)}",
                   f"ReqNodeList={','.join(sorted(counts))}", tres, "StartTime=now")
        got = self._run("scontrol", "release", sid)
        if got.returncode != 0 and self.jobs().get(job_id, EngineJob(job_id, sid, "held")).state == "held":
            raise EngineRefused(job_id, "start", f"scontrol release: {got.stderr.strip()}")
        # (a job Slurm requeued without a hold is pending already: released, it starts where the update says)

    def stop(self, job_ids: Sequence[str], timeout: float = 30.0) -> dict[str, str]:
        """Checkpoint and requeue held every job of ``job_ids``; wait until each is held (its GPUs free)."""
        done: dict[str, str] = {}
        before = self.jobs()
        for jid in job_ids:
            sid = self.ids[jid]
            st = before.get(jid)
            how = "hold" if st is not None and st.state in ("pending", "held") else "requeuehold"
            got = self._run("scontrol", how, sid)  # a job released but not yet running goes back to held
            done[jid] = how if got.returncode == 0 else f"{how} refused: {got.stderr.strip()}"
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            now = self.jobs()
            if all(now.get(j, EngineJob(j, "", "held")).state in ("held", "done", "failed") for j in job_ids):
                break
            time.sleep(0.1)
        return done

    def hold(self, job_id: str) -> None:
        sid = self.ids[job_id]
        st = self.jobs().get(job_id)
        if st is None or st.state == "held":
            return
        if st.state == "pending":
            self._must(job_id, "hold", "scontrol", "hold", sid)
        else:
            self._must(job_id, "hold", "scontrol", "requeuehold", sid)

    def cancel_all(self) -> None:
        """Cancel every job of this run (the end of a replay or a test)."""
        if self.ids:
            self._run("scancel", *self.ids.values())

    def close(self) -> None:
        pass
