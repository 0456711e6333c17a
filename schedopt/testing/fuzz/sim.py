"""The simulator's surfaces fuzzed (issue 25): ``WorkloadJob``, ``Workload``, ``simulate``, ``simulate_many``,
``cluster_preset``, the ``schedopt simulate`` command line, and workload files (encodings, line endings, bad rows).

Each simulation entry runs the path to a :class:`~schedopt.sim.SimResult` on a two-job workload, a 16-GPU cluster
and a 600 s cap with the ``fifo`` policy (milliseconds), and its ``accept`` check refuses a result that cannot be
right whatever the input: a job finishing before it arrived or after the last round, a record that does not match
the workload, a round outside the cap.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from .catalog import Bad
from .runner import Case, EntryPoint, Outcome, run_case

__all__ = ["WORKLOAD_FILE_CASES", "honest_result", "run_invariants", "run_workload_file_case", "sim_entries",
           "small_workloads"]

_MAX_TIME = 600.0


def _cluster() -> Any:
    from ...sia import Cluster, GpuType

    return Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))


def _two_jobs() -> Any:
    from ... import sim

    return sim.Workload("two", (sim.WorkloadJob("j0", 0.0, "cifar10", 2, 256), sim.WorkloadJob("j1", 30.0, "bert", 1, 12)))


def honest_result(res: Any, workload: Any = None, max_time: float | None = _MAX_TIME) -> str | None:
    """Why a :class:`~schedopt.sim.SimResult` cannot be right (None when nothing is wrong): a job recorded twice or
    not at all, a finish before the arrival or start, a start before the arrival, a finish after the last round's
    end, a JCT that is not finish - arrival, a round past the cap, an arrival that differs from the workload's."""
    from ...sim import SimResult

    if not isinstance(res, SimResult):
        return f"returned {type(res).__name__}, not a SimResult"
    ids = [j.id for j in res.jobs]
    if len(set(ids)) != len(ids):
        return f"a job is recorded twice: {ids}"
    if workload is not None:
        want = {j.name: j.time for j in workload.jobs}
        if set(ids) != set(want):
            return f"records jobs {sorted(ids)[:4]} for a workload of {sorted(want)[:4]}"
        bad = [j.id for j in res.jobs if j.arrival != want[j.id]]
        if bad:
            return f"job {bad[0]} recorded arriving at {res.jobs[ids.index(bad[0])].arrival}, not {want[bad[0]]}"
    R = float(res.meta.round_seconds)
    end = max((r.time for r in res.rounds), default=0.0) + R
    for j in res.jobs:
        if not math.isfinite(j.arrival) or j.arrival < 0:
            return f"job {j.id} arrives at {j.arrival}"
        if j.start is not None and j.start < j.arrival:
            return f"job {j.id} starts at {j.start}, before its arrival {j.arrival}"
        if j.finish is not None:
            if j.start is None or j.finish < j.start or j.finish < j.arrival:
                return f"job {j.id} finishes at {j.finish} (arrival {j.arrival}, start {j.start})"
            if j.finish > end + 1e-6:
                return f"job {j.id} finishes at {j.finish}, after the last round's end {end}"
            if j.jct is None or abs(j.jct - (j.finish - j.arrival)) > 1e-9 * max(1.0, j.finish):
                return f"job {j.id} JCT {j.jct} != finish - arrival"
    if max_time is not None and any(r.time > max_time for r in res.rounds):
        return f"a round starts after the cap {max_time}"
    return None


def _simulate_accept(out: Any) -> str | None:
    res, w, cap = out
    return honest_result(res, w, cap)


@functools.cache
def _tmp() -> Path:
    import atexit
    import shutil

    d = Path(tempfile.mkdtemp(prefix="schedopt-simfuzz-"))
    atexit.register(shutil.rmtree, d, True)
    (d / "two.csv").write_text(_two_jobs().to_csv())
    return d


def sim_entries() -> list[EntryPoint]:
    """The simulator's entry points (see the module doc)."""
    from ... import sim

    def run(w: Any, **kw: Any) -> Any:
        kw.setdefault("max_time", _MAX_TIME)
        kw.setdefault("job_model", "sia")
        kw.setdefault("progress", False)
        res = sim.simulate(_cluster(), w, sim.get_policy("fifo"), **kw)
        cap = kw.get("max_time")
        return res, w, cap if isinstance(cap, (int, float)) and math.isfinite(cap) else None

    def job(**kw: Any) -> Any:
        return run(sim.Workload("w", (sim.WorkloadJob(**kw), sim.WorkloadJob("other", 30.0, "bert", 1, 12))))

    def workload(**kw: Any) -> Any:
        return run(sim.Workload(**kw))

    def prep_workload(f: str, v: Any, kw: dict[str, Any]) -> Any:
        if f == "jobs" and v == "dup":
            return (sim.WorkloadJob("a", 0.0, "bert", 1, 12), sim.WorkloadJob("a", 10.0, "bert", 1, 12))
        return v

    def simulate(**kw: Any) -> Any:
        return run(_two_jobs(), **kw)

    def many(**kw: Any) -> Any:
        kw.setdefault("workers", 1)
        kw.setdefault("max_time", _MAX_TIME)
        out = sim.simulate_many("fifo", str(_tmp() / "two.csv"), cluster="sia-64", progress=False, **kw)
        return out

    def many_accept(out: Any) -> str | None:
        for r in out:
            why = honest_result(r, None, None)
            if why:
                return why
        return None

    def preset(**kw: Any) -> Any:
        return sim.cluster_preset(**kw).num_gpus

    def cli_simulate(**kw: Any) -> Any:
        from ... import cli

        argv = ["simulate", "--workload", str(_tmp() / "two.csv"), "--policy", "fifo", "--cluster", "sia-64",
                "--progress", "off"]
        for k, v in kw.items():
            argv += [f"--{k.replace('_', '-')}", str(v)]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(argv)
        except SystemExit as exc:  # argparse's usage error
            code = exc.code if isinstance(exc.code, int) else 2
        if code:
            from .entries import CliExit

            raise CliExit(f"exit {code}: {err.getvalue().strip()[-200:]}")
        return out.getvalue()

    return [
        EntryPoint("sim.WorkloadJob", job,
                   lambda: {"name": "j0", "time": 0.0, "application": "cifar10", "num_replicas": 2, "batch_size": 256},
                   {"name": "name", "time": "arrival", "application": "known_name", "num_replicas": "count",
                    "batch_size": "count"}, accept=_simulate_accept),
        EntryPoint("sim.Workload", workload, lambda: {"name": "w", "jobs": _two_jobs().jobs},
                   {"name": "name", "jobs": "items"}, accept=_simulate_accept, prepare=prep_workload),
        EntryPoint("sim.simulate", simulate, lambda: {"round_seconds": 60.0, "max_time": _MAX_TIME},
                   {"round_seconds": "round_seconds", "max_time": "max_time", "job_model": "choice",
                    "estimator": "choice", "adaptive": "bool", "charge_policy_time": "bool", "progress": "bool"},
                   accept=_simulate_accept),
        EntryPoint("sim.simulate_many", many, lambda: {"seeds": (0,), "round_seconds": 60.0},
                   {"seeds": "seeds", "round_seconds": "round_seconds?", "max_time": "max_time", "workers": "count?",
                    "estimator": "choice", "job_model": "choice?"}, accept=many_accept),
        EntryPoint("sim.cluster_preset", preset, lambda: {"name": "sia-64"}, {"name": "known_name"}),
        EntryPoint("cli simulate", cli_simulate, lambda: {"seeds": "0", "round_seconds": 60},
                   {"seeds": "seeds", "round_seconds": "round_seconds", "workers": "count"}),
    ]


def _w(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


_HEAD = "name,time,application,num_replicas,batch_size"
_OK_ROWS = ["j0,0,cifar10,2,256", "j1,30,bert,1,12"]


def _csv(rows: list[str], nl: str = "\n") -> str:
    return nl.join([_HEAD, *rows]) + nl


#: workload files: label -> (how to make it in a directory, the answer expected: "ok" (it loads, with the two jobs
#: j0 at 0 s and j1 at 30 s) or "named" (an InputError))
WORKLOAD_FILE_CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "UTF-8": (lambda d: _w(d / "w.csv", _csv(_OK_ROWS).encode()), "ok"),
    "UTF-8 with BOM": (lambda d: _w(d / "w.csv", b"\xef\xbb\xbf" + _csv(_OK_ROWS).encode()), "ok"),
    "UTF-16 with BOM": (lambda d: _w(d / "w.csv", _csv(_OK_ROWS).encode("utf-16")), "ok"),
    "Latin-1 name": (lambda d: _w(d / "w.csv", _csv(["caf\u00e9,0,cifar10,2,256", "j1,30,bert,1,12"]).encode("latin-1")),
                     "ok"),
    "\\r\\n line endings": (lambda d: _w(d / "w.csv", _csv(_OK_ROWS, "\r\n").encode()), "ok"),
    "\\r line endings": (lambda d: _w(d / "w.csv", _csv(_OK_ROWS, "\r").encode()), "ok"),
    "unsorted rows": (lambda d: _w(d / "w.csv", _csv(list(reversed(_OK_ROWS))).encode()), "ok"),
    "missing file": (lambda d: d / "no-such-file.csv", "named"),
    "a directory": (lambda d: d, "named"),
    "empty file": (lambda d: _w(d / "w.csv", b""), "named"),
    "header only": (lambda d: _w(d / "w.csv", (_HEAD + "\n").encode()), "named"),
    "truncated row": (lambda d: _w(d / "w.csv", (_csv(_OK_ROWS[:1]) + "j1,30,be").encode()), "named"),
    "UTF-16 without BOM": (lambda d: _w(d / "w.csv", _csv(_OK_ROWS).encode("utf-16-le")), "named"),
    "binary": (lambda d: _w(d / "w.csv", bytes(range(256))), "named"),
    "arrival 1e300": (lambda d: _w(d / "w.csv", _csv(["j0,1e300,cifar10,2,256"]).encode()), "named"),
    "arrival nan": (lambda d: _w(d / "w.csv", _csv(["j0,nan,cifar10,2,256"]).encode()), "named"),
    "arrival -1": (lambda d: _w(d / "w.csv", _csv(["j0,-1,cifar10,2,256"]).encode()), "named"),
    "batch size 1e30": (lambda d: _w(d / "w.csv", _csv(["j0,0,cifar10,2,1e30"]).encode()), "named"),
    "replicas 0": (lambda d: _w(d / "w.csv", _csv(["j0,0,cifar10,0,256"]).encode()), "named"),
    "replicas 1.5": (lambda d: _w(d / "w.csv", _csv(["j0,0,cifar10,1.5,256"]).encode()), "named"),
    "duplicate names": (lambda d: _w(d / "w.csv", _csv(["j0,0,cifar10,2,256", "j0,30,bert,1,12"]).encode()), "named"),
    "unknown application": (lambda d: _w(d / "w.csv", _csv(["j0,0,no-such-app,2,256"]).encode()), "named"),
    "extra field": (lambda d: _w(d / "w.csv", _csv(["j0,0,cifar10,2,256,7"]).encode()), "named"),
    "missing column": (lambda d: _w(d / "w.csv", b"name,time,application\nj0,0,cifar10\n"), "named"),
    "NUL in a row": (lambda d: _w(d / "w.csv", _csv(["j0,0,cifar10,2,25\x006"]).encode()), "named"),
}


def run_workload_file_case(label: str, timeout: float = 5.0) -> Outcome:
    """Load one :data:`WORKLOAD_FILE_CASES` file with :func:`schedopt.sim.load_workload` and classify the answer:
    ``named`` / ``ok`` as expected, ``silent`` when a bad file loads or a good one loads wrong, ``raw``, ``hang``."""
    from ... import sim

    make, expect = WORKLOAD_FILE_CASES[label]
    with tempfile.TemporaryDirectory() as tmp:
        path = make(Path(tmp))

        def load() -> Any:
            return sim.load_workload(path)

        out = run_case(EntryPoint("sim.load_workload", lambda: load(), dict, {}), None, timeout)
        got = None
        if out.status == "ok":
            got = load()
    case = Case("path", Bad(label, None, reject=expect == "named"))
    status, detail = out.status, out.detail
    if status == "ok" and expect == "named":
        status, detail = "silent", "loaded"
    elif status == "ok":
        jobs = sorted((j.name, j.time) for j in got.jobs)
        want = [("caf\u00e9" if label == "Latin-1 name" else "j0", 0.0), ("j1", 30.0)]
        if jobs != sorted(want):
            status, detail = "silent", f"loaded as {jobs}"
    elif status == "named" and expect == "ok":
        status = "raw"  # a good file refused is a failure too
        detail = f"a readable file refused: {detail}"
    return Outcome(status, "sim.load_workload", case, detail, out.seconds)


# ---------------------------------------------------------------------------------------------- valid random runs
#: the usual global batch of each zoo application (the Sia artifacts' workloads)
ZOO_BATCH = {"bert": 48, "deepspeech2": 80, "cifar10": 512, "yolov3": 32, "ncf": 32768}


@st.composite
def small_workloads(draw: st.DrawFn, max_jobs: int = 6, max_arrival: int = 600,
                    replicas: tuple[int, ...] = (1, 2, 4, 8)) -> Any:
    """A valid :class:`~schedopt.sim.Workload` of 1..``max_jobs`` zoo jobs, arriving in 0..``max_arrival`` s, drawn
    in any order (the Workload sorts them; its warning is silenced here), built directly rather than filtered."""
    import warnings

    from ... import sim

    n = draw(st.integers(1, max_jobs))
    jobs = []
    for k in range(n):
        app = draw(st.sampled_from(sorted(ZOO_BATCH)))
        jobs.append(sim.WorkloadJob(f"{app}-{k}", float(draw(st.integers(0, max_arrival))), app,
                                    draw(st.sampled_from(list(replicas))), ZOO_BATCH[app]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sim.Workload("random", tuple(jobs))


def run_invariants(res: Any, workload: Any, cluster: Any, job_model: str, *, adaptive: bool,
                   max_time: float) -> list[str]:
    """What is wrong with a simulation's records (empty when nothing is), checked from the records alone: each job
    recorded once with its workload arrival; started no earlier than it arrived; finished at most once, after it
    started, within the last round, holding GPUs until then and not after; a finished job's JCT at least its ideal
    time (:func:`schedopt.sim.feasibility.min_seconds`); no hopeless job finished; no GPU type over-committed at
    any segment start."""
    from ...sim.feasibility import min_seconds

    bad: list[str] = []
    why = honest_result(res, workload, max_time)
    if why:
        bad.append(why)
    spec = {j.name: j for j in workload.jobs}
    R = float(res.meta.round_seconds)
    for j in res.jobs:
        if any(s > e for s, e, _, _ in j.segments):
            bad.append(f"{j.id}: a segment ends before it starts")
        if j.finish is None:
            continue
        if j.finish > max_time + R + 1e-6:
            bad.append(f"{j.id}: finishes at {j.finish} after the cap {max_time} + a round")
        if not j.segments or max(e for _, e, _, _ in j.segments) != j.finish:
            bad.append(f"{j.id}: its last segment does not end at its finish {j.finish}")
        w = spec[j.id]
        ideal = min_seconds(cluster, j.application, w.num_replicas, w.batch_size, job_model, adaptive=adaptive)
        if j.jct is not None and j.jct < ideal - 1e-6:
            bad.append(f"{j.id}: JCT {j.jct} < its ideal time {ideal}")
        if j.id in res.hopeless:
            bad.append(f"{j.id}: said hopeless, yet it finished at {j.finish}")
    for t in sorted({s for j in res.jobs for s, _, _, _ in j.segments}):
        for ty in cluster.type_names:
            held = sum(g for j in res.jobs for s, e, tt, g in j.segments if tt == ty and s <= t < e)
            if held > cluster[ty].total_gpus + 1e-9:
                bad.append(f"t={t}: {held} {ty} GPUs held > {cluster[ty].total_gpus}")
    return bad
