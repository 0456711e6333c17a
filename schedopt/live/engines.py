"""``schedopt live replay WORKLOAD --engine slurm|ray --policy SPEC --time-scale X``: a workload's jobs submitted
to a real engine at their arrival times, the scheduling loop (:class:`schedopt.live.driver.LiveReplay`) in charge
until every job finishes, and the records written (``RUN_DIR/records.jsonl``: what ``schedopt simulate`` writes,
plus every decision, what the engine did and where the driver was (re)started).

The engine is the one the environment names (Slurm: ``SLURM_CONF`` or the system's configuration, the loop's
partition ``--partition``; Ray: ``--ray-address``), or one started for the run with ``--local TYPE:GPUSxNODES``
(:mod:`schedopt.testing.local_engines`: a Slurm controller and a slurmd per node on this host, or a local Ray
cluster of logical nodes). Running the same command again on the same ``--run-dir`` after the driver was killed
carries on where it stopped (against the same engine: a ``--local`` cluster ends with its driver).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import signal
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..sim.workloads import Workload, WorkloadJob

__all__ = ["add_parser", "cmd_live_replay", "parse_nodes", "replay", "short_workload"]


def _plain(doc: str | None) -> str | None:
    """A docstring as command-line help: Sphinx roles (``:class:`x` ``) become plain literals (``x``), which the
    terminal and the generated command-line page both read."""
    import re

    return re.sub(r":[a-z]+:`~?([^`]+)`", r"``\1``", doc) if doc else doc


def short_workload(n_jobs: int = 24, *, source: str = "saturn/1", application: str = "cifar10", stretch: float = 4.0,
                   max_gpus: int = 4, name: str | None = None) -> Workload:
    """The first ``n_jobs`` jobs of ``application`` in the shipped workload ``source``, arrivals shifted to start at
    0 and divided by ``stretch`` (a busier trace), requests capped at ``max_gpus``: a workload that runs in minutes
    on a real engine at a time scale of tens."""
    from ..sim import load_workload

    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise InputError("n_jobs", n_jobs, "must be an integer >= 1")
    src = [j for j in load_workload(source).jobs if j.application == application][:n_jobs]
    if len(src) < n_jobs:
        raise InputError("n_jobs", n_jobs, f"{source} has only {len(src)} {application} jobs")
    t0 = src[0].time
    return Workload(name or f"{source.replace('/', '-')}-{application}-{n_jobs}",
                    tuple(WorkloadJob(j.name, float(round((j.time - t0) / stretch)), j.application,
                                      min(j.num_replicas, max_gpus), j.batch_size) for j in src))


def parse_nodes(text: str) -> dict[str, tuple[str, int]]:
    """``t4:4x4`` (4 nodes of 4 t4 GPUs) or ``t4:4x2,v100:8x1`` -> node name -> (GPU type, GPUs); nodes are named
    ``<type>-<k>`` as in the simulator's clusters."""
    out: dict[str, tuple[str, int]] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        t, _, shape = part.partition(":")
        g, _, n = shape.partition("x")
        if not t or not g.isdigit() or not n.isdigit() or int(g) < 1 or int(n) < 1:
            raise InputError("--local", text, "must look like t4:4x4 (TYPE:GPUS_PER_NODExNODES), comma-separated")
        for k in range(int(n)):
            out[f"{t}-{k}"] = (t, int(g))
    if not out:
        raise InputError("--local", text, "names no node")
    return out


def replay(workload: Workload, *, engine: str, policy: str, time_scale: float, run_dir: str | Path,
           round_seconds: float = 60.0, job_model: str = "pollux", local: str | None = None,
           partition: str = "schedopt", ray_address: str | None = None, max_wall: float | None = None) -> Any:
    """Run the replay (see the module docstring); the :class:`~schedopt.sim.SimResult` of its records."""
    from ..sim import get_policy
    from ..testing.local_engines import LocalRay, LocalSlurm
    from .driver import LiveReplay

    if engine not in ("slurm", "ray"):
        raise InputError("--engine", engine, "must be slurm or ray")
    if not isinstance(time_scale, (int, float)) or not math.isfinite(time_scale) or time_scale <= 0:
        raise InputError("--time-scale", time_scale, "must be a number > 0")
    pol = get_policy(policy)
    nodes = parse_nodes(local) if local else None
    run = Path(run_dir).resolve()  # the engine's daemons and jobs run elsewhere: a relative folder would not reach
    # the run's tag in the engine's job names: the folder's name and a digest of its path (a job of another run
    # folder of the same name is never taken for one of this run's)
    tag = f"{run.resolve().name}-{hashlib.sha1(str(run.resolve()).encode()).hexdigest()[:8]}"
    if engine == "slurm":
        from .slurm import SlurmEngine

        cluster = LocalSlurm(nodes, root=str(run / "slurm")) if nodes else None
        if cluster is not None:
            cluster.start()
        try:
            eng = SlurmEngine(cluster.env if cluster else None, partition=cluster.partition if cluster else partition,
                              tag=tag)
            rep = LiveReplay(eng, workload, pol, run_dir=run, time_scale=time_scale, round_seconds=round_seconds,
                             job_model_name=job_model, policy_spec=policy)
            return rep.run(max_wall=max_wall)
        finally:
            if cluster is not None:
                cluster.stop()
    from .ray import RayEngine

    rc = LocalRay(nodes) if nodes else None
    if rc is not None:
        rc.start()
    try:
        reng = RayEngine(address=rc.address if rc else ray_address, tag=tag)
        rep = LiveReplay(reng, workload, pol, run_dir=run, time_scale=time_scale, round_seconds=round_seconds,
                         job_model_name=job_model, policy_spec=policy)
        return rep.run(max_wall=max_wall)
    finally:
        if rc is not None:
            rc.stop()


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def cmd_live_replay(args: argparse.Namespace) -> int:
    """``schedopt live replay``: a workload replayed on a real engine (Slurm or Ray); the exit code."""
    from ..sim import load_workload

    wl = load_workload(args.workload)
    if args.first:
        wl = Workload(f"{wl.name}-first{args.first}", wl.jobs[:args.first])
    # SIGTERM (a service manager's stop, `timeout`) ends the run as Ctrl-C does: the local engine's daemons are
    # stopped on the way out instead of being left running
    old = signal.signal(signal.SIGTERM, _terminated)
    try:
        res = replay(wl, engine=args.engine, policy=args.policy, time_scale=args.time_scale, run_dir=args.run_dir,
                     round_seconds=args.round_seconds, job_model=args.job_model, local=args.local,
                     partition=args.partition, ray_address=args.ray_address, max_wall=args.max_wall)
    finally:
        signal.signal(signal.SIGTERM, old)
    live = dict(res.meta.details.get("live", {}))
    done = sum(1 for j in res.jobs if j.finish is not None)
    print(f"{done}/{len(res.jobs)} jobs finished on {args.engine}; mismatches {live.get('mismatches')}, "
          f"refusals {live.get('refusals')}, engine requeues {live.get('engine_requeues')}, driver starts "
          f"{len(live.get('driver_starts', []))}; records: {Path(args.run_dir) / 'records.jsonl'}")
    return 0 if done == len(res.jobs) else 1


def add_parser(sub: Any) -> None:
    """Register ``schedopt live replay``."""
    p = sub.add_parser("live", help="schedopt's policies in charge of a real resource manager (Slurm, Ray)")
    lsub = p.add_subparsers(dest="live_command", required=True, metavar="COMMAND")
    r = lsub.add_parser("replay", help="replay a workload on a real engine under a policy, until every job finishes",
                        description=_plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("workload", help="a shipped workload (saturn/1) or a CSV path")
    r.add_argument("--engine", required=True, choices=("slurm", "ray"))
    r.add_argument("--policy", required=True, help="a policy spec, as schedopt simulate's (sia, tiresias, ...)")
    r.add_argument("--time-scale", type=float, required=True,
                   help="simulated seconds per wall second (30: an hour of the trace runs in two minutes)")
    r.add_argument("--run-dir", required=True, help="job folders, the driver's state and the records")
    r.add_argument("--round-seconds", type=float, default=60.0)
    r.add_argument("--job-model", default="pollux", choices=("pollux", "sia"))
    r.add_argument("--first", type=int, default=0, help="only the first N jobs of the workload")
    r.add_argument("--local", default=None, metavar="TYPE:GPUSxNODES",
                   help="start a local engine for the run (Slurm daemons or a Ray cluster on this host)")
    r.add_argument("--partition", default="schedopt", help="Slurm: the partition the loop owns")
    r.add_argument("--ray-address", default=None, help="Ray: the cluster's address (default: ray.init's)")
    r.add_argument("--max-wall", type=float, default=None, help="stop after this many wall seconds")
    r.set_defaults(func=cmd_live_replay)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="schedopt")
    sub = ap.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = ap.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        print(f"schedopt live replay: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
