"""A training-like program for tests and demos of the engine drivers (:mod:`schedopt.live.slurm`,
:mod:`schedopt.live.ray`): ``python -m schedopt.live.trainer JOB_DIR``.

**It does no real GPU work.** It reads the GPUs its resource manager gave it from its environment (Slurm:
``SLURM_JOB_NODELIST`` and ``SLURM_GPUS_ON_NODE``, with ``CUDA_VISIBLE_DEVICES`` / ``SLURM_STEP_GPUS`` where set; Ray:
the GPU ids of each actor of its gang, passed by the driver), and runs "steps" whose time follows the application's
profile for that configuration: the simulator's job model (:class:`schedopt.sim.jobs.JobState`: the zoo's fitted
throughput, the batch size it would choose, epoch by epoch), on a clock that runs ``time_scale`` times faster than
the wall clock. It pays the job model's checkpoint-restore delay on every (re)start, counted from the round that
decided the start (as the simulator counts it): the loop's delay, the engine's stop and start and its own start-up
use that delay up first, and only a start later than the delay makes the job later than the simulator's. It reports progress and step times to ``JOB_DIR/progress.json`` (atomically, every tick),
checkpoints on SIGTERM / SIGUSR1 (Slurm's requeue and preemption signals) and on the driver's stop request (Ray),
resumes from ``JOB_DIR/checkpoint.json``, and appends one line per start, checkpoint and finish to
``JOB_DIR/events.jsonl`` (so a test can count that no job ran twice).

The job directory holds ``spec.json`` (written once by the driver: application, job model, request, the run's
clock) and ``attempt.json`` (written before each start: the attempt number, the planned nodes and GPUs, when the
start was commanded).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["NO_GPU_WORK", "TrainerSpec", "expand_hostlist", "main", "read_json", "run", "slurm_allocation",
           "write_json"]

#: said in every report and on stdout
NO_GPU_WORK = "schedopt.live.trainer does no real GPU work: its step times follow the job model, time-scaled"

#: real seconds between two progress reports
TICK_SECONDS = 0.2


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write ``doc`` to ``path`` atomically (a temporary file in the same folder, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True))
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON document at ``path``, or None when there is none (yet)."""
    try:
        got = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return got if isinstance(got, dict) else None


def process_start_wall() -> float | None:
    """The wall time this process was created (Linux ``/proc/self/stat``, 10-ms ticks), None where unknown: with
    the time of the first step it splits a start's latency into the engine's (up to the process) and the
    program's own start-up (imports, reading its GPUs)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        boot = time.time() - float(Path("/proc/uptime").read_text().split()[0])  # (``btime`` is whole seconds)
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def append_event(job_dir: Path, event: Mapping[str, Any]) -> None:
    with open(job_dir / "events.jsonl", "a") as f:
        f.write(json.dumps(dict(event), sort_keys=True) + "\n")


@dataclass(frozen=True)
class TrainerSpec:
    """What the driver tells the program once (``spec.json``): the job, its application and job model, and the
    run's clock (``epoch_wall``: the wall time of simulated t = 0; ``time_scale``: simulated seconds per wall
    second); ``node_types``: node name -> GPU type."""

    job_id: str
    application: str
    arrival: float
    requested_gpus: int
    batch_size: int
    adaptive: bool
    job_model: str
    time_scale: float
    epoch_wall: float
    node_types: Mapping[str, str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainerSpec:
        try:
            return cls(str(d["job_id"]), str(d["application"]), float(d["arrival"]), int(d["requested_gpus"]),
                       int(d["batch_size"]), bool(d["adaptive"]), str(d["job_model"]), float(d["time_scale"]),
                       float(d["epoch_wall"]), {str(k): str(v) for k, v in dict(d["node_types"]).items()})
        except KeyError as exc:
            raise InputError("spec.json", exc.args[0], "is missing") from None

    def to_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "application": self.application, "arrival": self.arrival,
                "requested_gpus": self.requested_gpus, "batch_size": self.batch_size, "adaptive": self.adaptive,
                "job_model": self.job_model, "time_scale": self.time_scale, "epoch_wall": self.epoch_wall,
                "node_types": dict(self.node_types)}

    def now(self) -> float:
        """Simulated seconds since the run's t = 0."""
        return (time.time() - self.epoch_wall) * self.time_scale


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list (``t4-[0-1,3],v100-2``) as node names, without calling ``scontrol`` (here so
    that the trainer, run inside a Slurm job, needs no other module; :mod:`schedopt.live.slurm` gives it too)."""
    out: list[str] = []
    depth, cur, parts = 0, "", []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    if cur:
        parts.append(cur)
    for p in parts:
        if "[" not in p:
            out.append(p)
            continue
        head, rest = p.split("[", 1)
        body, tail = rest.split("]", 1)
        for r in body.split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            for k in range(int(lo), int(hi or lo) + 1):
                out.append(f"{head}{k:0{width}d}{tail}")
    return out


def gres_indices(detail: str) -> tuple[int, ...]:
    """Slurm's ``gres_detail`` of one node as GPU indices: ``gpu:3(IDX:0-1,3)`` -> (0, 1, 3); ``gpu:0`` -> ()."""
    if "IDX:" not in detail:
        return ()
    body = detail.split("IDX:", 1)[1].rstrip(")")
    out: list[int] = []
    for part in body.split(","):
        if not part or part == "N/A":
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(out)


def _slurm_job_gpus(job_id: str) -> dict[str, list[int]] | None:
    """Node -> GPU indices of Slurm job ``job_id`` from ``squeue --json`` (None when it cannot say)."""
    try:
        got = subprocess.run(["squeue", "--json", "--jobs", job_id], capture_output=True, text=True, timeout=20)
        jobs = json.loads(got.stdout)["jobs"] if got.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError):
        return None
    for j in jobs:
        if str(j.get("job_id")) == job_id and j.get("nodes"):
            names, details = expand_hostlist(str(j["nodes"])), list(j.get("gres_detail") or [])
            alloc = {n: list(gres_indices(d)) for n, d in zip(names, details)}
            if len(details) == len(names) and all(alloc.values()):  # (empty while Slurm is still setting it up)
                return alloc
    return None


def slurm_allocation(env: Mapping[str, str]) -> dict[str, list[int]] | None:
    """The nodes and GPUs of a Slurm batch job: Slurm's own record of the job named by ``SLURM_JOB_ID`` (``squeue
    --json``: every node's GPU indices, counts that may differ per node); failing that, the environment: every
    node of ``SLURM_JOB_NODELIST`` with ``SLURM_GPUS_ON_NODE`` GPUs, indices from ``CUDA_VISIBLE_DEVICES`` or
    ``SLURM_STEP_GPUS`` / ``SLURM_JOB_GPUS`` where Slurm set them (it sets none for file-backed GPUs outside a
    step), else ``0..k-1``. None outside a Slurm job."""
    nodes = env.get("SLURM_JOB_NODELIST")
    if not nodes:
        return None
    asked = _slurm_job_gpus(env.get("SLURM_JOB_ID", "")) if env.get("SLURM_JOB_ID") else None
    if asked is not None:
        return asked
    k = int(env.get("SLURM_GPUS_ON_NODE", "0") or 0)
    ids = env.get("CUDA_VISIBLE_DEVICES") or env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS") or ""
    idx = [int(x) for x in ids.split(",") if x.strip().isdigit()]
    if len(idx) != k:
        idx = list(range(k))
    return {n: list(idx) for n in expand_hostlist(nodes)}


class _Stop:
    """Set by a signal or by the Ray actor's stop call: checkpoint and leave at the next tick."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.why = ""

    def set(self, why: str) -> None:
        self.why = self.why or why
        self.event.set()


def run(job_dir: str | Path, allocation: Mapping[str, list[int]], *, source: str,
        stop: threading.Event | None = None, tick: float = TICK_SECONDS,
        log: Callable[[str], None] | None = None) -> str:
    """Train (without GPU work) from the last checkpoint in ``job_dir`` on ``allocation`` (node -> GPU indices, as
    read from the engine's environment by the caller) until the job's last epoch ends or ``stop`` is set. Returns
    ``"finished"`` or ``"checkpointed"``."""
    from ..sia import Config
    from ..sim.jobs import JobState, job_model

    ready_wall = time.time()  # the program has imported what it needs and been given its GPUs

    d = Path(job_dir)
    spec_doc = read_json(d / "spec.json")
    if spec_doc is None:
        raise InputError("job_dir", str(d), "holds no spec.json (written by the driver)")
    spec = TrainerSpec.from_dict(spec_doc)
    attempt = read_json(d / "attempt.json") or {}
    ckpt = read_json(d / "checkpoint.json") or {}
    say = log or (lambda s: None)
    number = int(attempt.get("number", 0))
    if ckpt.get("finished") is not None:  # it finished before (its driver may not have seen it): never run twice
        prog = read_json(d / "progress.json") or {}
        write_json(d / "progress.json", {**prog, "attempt": number, "status": "finished"})
        append_event(d, {"event": "already-finished", "attempt": number, "sim_time": spec.now(), "wall": time.time(),
                         "pid": os.getpid(), "finish": ckpt["finished"]})
        say(f"job {spec.job_id} finished at t={ckpt['finished']:.1f} s already: nothing to run")
        return "finished"
    nodes = {n: len(g) for n, g in allocation.items() if g}
    types = {spec.node_types.get(n, "?") for n in nodes}
    if not nodes or len(types) != 1 or "?" in types:
        raise InputError("allocation", dict(allocation), "must give GPUs on known nodes of one GPU type")
    jm = job_model(spec.job_model)
    j = JobState(spec.job_id, spec.application, spec.arrival, spec.requested_gpus, spec.batch_size, spec.adaptive, jm)
    j.progress = float(ckpt.get("progress", 0.0))
    j.epoch = int(ckpt.get("epoch", 0))
    j.attained = float(ckpt.get("attained", 0.0))
    if not attempt.get("reset_batch", False):
        j.local_bsz, j.accum = int(ckpt.get("local_bsz", 0)), int(ckpt.get("accum", 0))
    j.seen = tuple(sorted(tuple(s) for s in ckpt.get("seen", ())))
    j.nodes = nodes
    j.config = Config(len(nodes), sum(nodes.values()), types.pop())
    j.started = True
    j.rebatch()
    t0 = spec.now()
    # the job model's checkpoint-restore delay runs from the round's decision (as in the simulator) and covers
    # everything until the first step: the loop's delay, the engine's stop and start, this process starting up;
    # only what is left of it is paid here
    decided = float(attempt.get("decided_at", attempt.get("commanded_sim", t0)))
    j.restart_left = max(0.0, jm.restart(spec.application) - max(0.0, t0 - decided))
    began = {"event": "start", "attempt": number, "sim_time": t0, "wall": time.time(), "pid": os.getpid(),
             "allocation": {n: list(g) for n, g in allocation.items()}, "source": source,
             "restart_paid": j.restart_left, "progress": j.progress, "process_start_wall": process_start_wall(),
             "process_clock": "uptime",
             "ready_wall": ready_wall}
    append_event(d, began)
    say(f"{NO_GPU_WORK}; job {spec.job_id} attempt {number} on {dict(allocation)} from {source}")
    steps = int(ckpt.get("steps", 0))
    last = t0

    def report(status: str, now: float) -> None:
        from ..sim.jobs import step_time_at

        p = jm.truth(spec.application).params[j.config.gpu_type] if j.config is not None else None
        step = (step_time_at(p, len(j.nodes), j.replicas(), j.local_bsz, j.accum) if p is not None and j.local_bsz
                else math.nan)
        doc = {"job_id": spec.job_id, "attempt": number, "status": status, "sim_time": now, "progress": j.progress,
               "target": j.application.target, "epoch": j.epoch, "local_bsz": j.local_bsz, "accum": j.accum,
               "batch": j.batch, "attained": j.attained, "steps": steps, "step_time_s": step,
               "allocation": {n: list(g) for n, g in allocation.items()}, "started_sim": t0,
               "finish": j.finish, "seen": [list(s) for s in j.seen], "note": NO_GPU_WORK}
        write_json(d / "progress.json", doc)
        # every report is a checkpoint too: a node lost (SIGKILL) costs at most one tick of progress
        write_json(d / "checkpoint.json", {"progress": j.progress, "epoch": j.epoch, "attained": j.attained,
                                           "local_bsz": j.local_bsz, "accum": j.accum, "steps": steps,
                                           "nodes": dict(j.nodes), "attempt": number, "finished": j.finish,
                                           "seen": [list(s) for s in j.seen]})

    report("running", t0)
    ev = stop or threading.Event()
    while True:
        ev.wait(tick)
        now = spec.now()
        before = j.progress
        j.advance(last, max(0.0, now - last))
        if j.local_bsz:
            from ..sim.jobs import step_time_at

            p = jm.truth(spec.application).params[j.config.gpu_type]
            st = step_time_at(p, len(j.nodes), j.replicas(), j.local_bsz, j.accum)
            gained = j.progress - before
            steps += round(gained / max(j.rate() * st, 1e-12)) if gained > 0 else 0
        last = now
        if j.finish is not None:
            report("finished", j.finish)
            append_event(d, {"event": "finish", "attempt": number, "sim_time": j.finish, "wall": time.time(),
                             "pid": os.getpid()})
            say(f"job {spec.job_id} finished at t={j.finish:.1f} s (simulated clock)")
            return "finished"
        if ev.is_set():
            report("checkpointed", now)
            append_event(d, {"event": "checkpoint", "attempt": number, "sim_time": now, "wall": time.time(),
                             "pid": os.getpid(), "progress": j.progress})
            say(f"job {spec.job_id} checkpointed at progress {j.progress:.4g} / {j.application.target:.4g}")
            return "checkpointed"
        report("running", now)


def _load_job_model() -> None:
    from ..sia import Config  # noqa: F401
    from ..sim.jobs import JobState  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    """``python -m schedopt.live.trainer JOB_DIR``: run under Slurm (the allocation from the environment)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m schedopt.live.trainer JOB_DIR", file=sys.stderr)
        return 2
    # the job model loads while Slurm answers where the job runs (the two make most of the program's start-up)
    loader = threading.Thread(target=_load_job_model, daemon=True)
    loader.start()
    alloc = slurm_allocation(os.environ)
    loader.join()
    if alloc is None:
        print("schedopt.live.trainer: no SLURM_JOB_NODELIST in the environment (run it under Slurm, or call "
              "schedopt.live.trainer.run with the allocation)", file=sys.stderr)
        return 2
    st = _Stop()
    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        signal.signal(sig, lambda s, f: st.set(signal.Signals(s).name))
    print(NO_GPU_WORK, flush=True)
    got = run(args[0], alloc, source="slurm-env", stop=st.event, log=lambda s: print(s, flush=True))
    return 0 if got in ("finished", "checkpointed") else 1


if __name__ == "__main__":
    raise SystemExit(main())
