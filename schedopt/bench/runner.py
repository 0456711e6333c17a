"""Run benchmark sweeps: one fresh process per run, every phase timed apart, a wall-clock guard outside the solver.

Each run executes in a fresh interpreter, ``python -m schedopt.bench.worker`` (no solver state or memory high-water
mark inherited from the parent, and no re-import of the caller's ``__main__`` as multiprocessing's spawn would do). The child imports what the run needs and does a
tiny warm-up solve with the same backend (so import and first-call costs are not charged to the measured phases;
they are recorded as ``t_warmup``), then generates the instance and goes through the phases, sending each phase's
result to the parent as it finishes. The parent waits at most ``guard_seconds`` after the child reports ready; past
that it kills the child and records the run as ``termination="guard"`` — a killed run never holds an incumbent,
which is kept apart from a solver time limit that returned one (``feasible`` with ``limit="time"``).

Peak memory is the child's ``ru_maxrss`` (the whole process: Python objects, numpy arrays and the solver's own
memory), with ``base_rss_mb`` (after imports and warm-up) recorded next to it.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ..errors import InputError
from .records import Record, machine_info, write_records
from .registry import BenchSpec, ModelPipeline, ProblemIOPipeline, get_spec, resolve

__all__ = ["Progress", "execute", "run"]

_STARTUP_SECONDS = 180.0  #: the most a child may take to import and warm up before its guard starts


# ------------------------------------------------------------------------------------------------- progress bar
class Progress:
    """A one-line progress bar on stderr with an estimate of the time left; silent when disabled."""

    def __init__(self, total: int, enabled: bool | None = None, stream: TextIO | None = None, width: int = 24) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.total = max(int(total), 1)
        self.done = 0
        self.width = width
        self.t0 = time.perf_counter()

    @staticmethod
    def _fmt(s: float) -> str:
        if not math.isfinite(s):
            return "?"
        s = round(s)
        return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")

    def line(self, label: str = "") -> str:
        el = time.perf_counter() - self.t0
        left = el / self.done * (self.total - self.done) if self.done else math.inf
        fill = int(self.width * self.done / self.total)
        bar = "#" * fill + "." * (self.width - fill)
        return f"[{bar}] {self.done}/{self.total} elapsed {self._fmt(el)} left ~{self._fmt(left)} {label}"

    def update(self, label: str = "", advance: int = 0) -> None:
        self.done = min(self.total, self.done + advance)
        if self.enabled:
            self.stream.write("\r\x1b[2K" + self.line(label)[:160])
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


# ------------------------------------------------------------------------------------------------------- child
def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _tiny_model() -> Any:
    import schedopt

    m = schedopt.LinearModel("warmup", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("w", {"x": [[2, 3, 4]]}, upper=5)
    m.set_objective({"x": [3, 4, 5]})
    return m


def _warm_up(spec: BenchSpec, backend: str) -> None:
    """Import and exercise the backend once so the measured phases carry no first-call costs."""
    import schedopt

    schedopt.solve(_tiny_model(), "highs")  # the LP-bound solver
    if isinstance(spec.pipeline, ModelPipeline) and backend in spec.pipeline.baselines:
        from .baselines import BASELINES

        if backend in BASELINES:
            import cvxpy as cp

            x = cp.Variable(3, boolean=True)
            cp.Problem(cp.Maximize(x @ [3, 4, 5]), [x @ [2, 3, 4] <= 5]).solve(solver=BASELINES[backend][0])
        return
    try:
        schedopt.solve(_tiny_model(), backend)
    except schedopt.errors.SchedoptError:
        pass  # a structure-specific backend may refuse the tiny model; warm_up() below loads what it uses
    schedopt.get_backend(backend).warm_up()


def _problem_package(spec: BenchSpec) -> None:
    import importlib

    try:
        importlib.import_module(f"schedopt.{spec.problem}")
    except ModuleNotFoundError as exc:
        if exc.name != f"schedopt.{spec.problem}":
            raise


def _instance_hash(instance: Any, problem: str = "") -> str:
    import hashlib

    import numpy as np

    from ..model import LinearModel

    h = hashlib.sha256()
    if isinstance(instance, LinearModel):
        a = instance.to_arrays()
        for arr in (a.c, a.A.data, a.A.indices, a.A.indptr, a.row_lower, a.row_upper, a.col_lower, a.col_upper,
                    a.integrality):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(str((a.maximize, a.constant)).encode())
        return h.hexdigest()[:16]
    try:
        import json

        from ..instances import _PROBLEMS

        io = _PROBLEMS.get(problem)
        if io is None or not isinstance(instance, io.cls):
            raise LookupError(problem)
        h.update(json.dumps(io.to_data(instance), sort_keys=True, allow_nan=False).encode())
    except Exception:  # not a registered instance type: hash its pickle
        import pickle

        h.update(pickle.dumps(instance))
    return h.hexdigest()[:16]


def _sizes(model: Any) -> dict[str, Any]:
    a = model.to_arrays()
    return {
        "variables": a.num_cols,
        "integer_variables": int(a.integrality.sum()),
        "constraints": a.num_rows,
        "nonzeros": int(a.A.nnz),
        "sense": model.sense,
    }


def _lp_bound(model: Any, threads: int) -> dict[str, Any]:
    """The LP relaxation's optimum (HiGHS), timed apart; only for integer models."""
    import schedopt

    if not model.to_arrays().is_mip:
        return {}
    t = time.perf_counter()
    lr = schedopt.solve(model.relax(), "highs", threads=threads)
    out: dict[str, Any] = {"t_lp": time.perf_counter() - t}
    if lr.termination.reason is schedopt.TerminationReason.OPTIMAL:
        out["lp_bound"] = lr.objective
    return out


def _outcome(res: Any) -> dict[str, Any]:
    from ..results import TerminationReason as TR

    r = res.termination.reason
    lim = res.termination.limit.value if res.termination.limit is not None else ""
    has = bool(res.has_solution)
    if r is TR.OPTIMAL:
        words = "optimal"
    elif r is TR.FEASIBLE:
        words = f"{lim or 'a'} limit with incumbent"
    elif r is TR.NO_SOLUTION_FOUND:
        words = f"{lim or 'a'} limit, no incumbent"
    else:
        words = r.value.replace("_", " ")
    return {
        "termination": r.value,
        "limit": lim,
        "has_incumbent": has,
        "outcome": words,
        "objective": res.objective_or_nan if has else None,
        "bound": res.bound if res.bound is not None and not math.isnan(res.bound) else None,
        "gap": res.gap if has else None,
        "backend_version": res.backend_version,
    }


def _find_solve_result(result: Any) -> Any:
    """The SolveResult a problem's ``solve`` returned, directly or as ``.result`` / the first of ``.results``."""
    from ..results import SolveResult

    if isinstance(result, SolveResult):
        return result
    r = getattr(result, "result", None)
    if isinstance(r, SolveResult):
        return r
    rs = getattr(result, "results", None)
    if isinstance(rs, dict):
        rs = list(rs.values())
    if isinstance(rs, (list, tuple)):
        for r in rs:
            if isinstance(r, SolveResult):
                return r
    return None


def _norm_termination(t: Any) -> str:
    from ..results import TerminationReason

    s = str(t).strip().lower().split(" ")[0].split("(")[0].split("[")[0]
    return s if s in {r.value for r in TerminationReason} else str(t)


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def execute(task: dict[str, Any], send: Callable[[str, Any], None] = lambda kind, payload: None) -> dict[str, Any]:
    """Run one task in this process; ``send(kind, payload)`` reports progress (``"ready"``, ``"phase"``,
    ``"update"``). Returns the record's fields."""
    import schedopt

    spec: BenchSpec = task["spec"]
    backend: str = task["backend"]
    params: dict[str, Any] = dict(task["params"])
    threads = int(params.get("threads", 1))
    out: dict[str, Any] = {}

    def put(**kw: Any) -> None:
        out.update(kw)
        send("update", kw)

    t0 = time.perf_counter()
    _problem_package(spec)
    _warm_up(spec, backend)
    put(t_warmup=time.perf_counter() - t0, base_rss_mb=_rss_mb())
    send("ready", None)
    gen_kw = dict(spec.gen_params)
    if task.get("load"):
        gen_kw["load"] = task["load"]
    solve_kw = {
        "time_limit": params.get("time_limit"),
        "mip_rel_gap": params.get("mip_rel_gap"),
        "threads": threads,
        "seed": int(params.get("solver_seed", 0)),
    }
    pipe = spec.pipeline

    if isinstance(pipe, ProblemIOPipeline):
        from ..instances import problems

        io = problems()[pipe.problem]
        send("phase", "generate")
        t = time.perf_counter()
        inst = io.generate(task["gpus"], task["seed"], **gen_kw)
        put(t_generate=time.perf_counter() - t)
        for attr, key in (("jobs", "jobs"),):
            if hasattr(inst, attr):
                try:
                    put(**{key: len(getattr(inst, attr))})
                except TypeError:
                    pass
        send("phase", "solve")
        import inspect

        try:
            sig = inspect.signature(io.solve).parameters
        except (TypeError, ValueError):
            sig = {}
        extra = {k: v for k, v in solve_kw.items() if k in sig and k != "time_limit"}
        t = time.perf_counter()
        result, _rows, summary = io.solve(inst, backend, solve_kw["time_limit"], **extra)
        wall = time.perf_counter() - t
        res = _find_solve_result(result)
        model = getattr(result, "model", None)
        if not isinstance(model, schedopt.LinearModel):
            model = res.model if res is not None else None
        if res is not None:
            tm = res.timings
            build = model.build_seconds if model is not None and model.build_seconds is not None else 0.0
            rest = max(wall - build - tm.handoff - tm.solve - tm.decode, 0.0)
            put(t_build=build, t_handoff=tm.handoff, t_solve=tm.solve, t_decode=tm.decode + rest, t_path=wall,
                extra=json.dumps({"decode_includes_rest_of_problem_solve_s": rest}), **_outcome(res))
        else:
            term = _norm_termination(summary.get("termination", ""))
            obj = _num(summary.get("objective"))
            has = term in ("optimal", "feasible") and obj is not None
            put(t_solve=wall, t_path=wall, termination=term, has_incumbent=has, outcome=term,
                objective=obj if has else None, bound=_num(summary.get("bound")), gap=_num(summary.get("gap")))
        if model is not None:
            put(**_sizes(model))
            put(**_lp_bound(model, threads))
        put(instance_hash=_instance_hash(inst, spec.problem), route="problemio")
        return out

    assert isinstance(pipe, ModelPipeline)
    gen = resolve(spec.generate)
    assert gen is not None
    send("phase", "generate")
    t = time.perf_counter()
    inst = gen(task["gpus"], task["seed"], **gen_kw)
    put(t_generate=time.perf_counter() - t)
    jobs_fn, gpus_fn = resolve(pipe.jobs), resolve(pipe.gpus)
    if jobs_fn is not None:
        put(jobs=int(jobs_fn(inst)))
    if gpus_fn is not None:
        put(gpus=int(gpus_fn(inst)))
    prepare, build = resolve(pipe.prepare), resolve(pipe.build)
    decode, place = resolve(pipe.decode), resolve(pipe.place)
    assert build is not None
    send("phase", "goodput")
    t = time.perf_counter()
    state = prepare(inst) if prepare is not None else inst
    put(t_goodput=time.perf_counter() - t if prepare is not None else 0.0)
    if backend in pipe.baselines:
        route = resolve(pipe.baselines[backend])
        assert route is not None
        model = build(state)  # the reference LinearModel (not timed): decoding, sizes and the LP bound use it
        send("phase", "solve")
        res, ph = route(state, model, {**solve_kw, "threads": threads})
        put(t_build=ph.get("build", 0.0), t_handoff=ph.get("handoff", 0.0), t_solve=ph.get("solve", 0.0), route="cvxpy"
            if backend.startswith("cvxpy") else backend)
        t_dec = ph.get("decode", 0.0)
    else:
        send("phase", "build")
        t = time.perf_counter()
        model = build(state)
        put(t_build=time.perf_counter() - t)
        send("phase", "solve")
        t = time.perf_counter()
        res = schedopt.solve(model, backend, **solve_kw)
        wall = time.perf_counter() - t
        put(t_solve=res.timings.solve, t_handoff=max(wall - res.timings.solve - res.timings.decode, 0.0),
            route="schedopt")
        t_dec = res.timings.decode
    put(**_outcome(res))
    decoded = None
    if res.has_solution and decode is not None:
        send("phase", "decode")
        t = time.perf_counter()
        decoded = decode(state, res)
        t_dec += time.perf_counter() - t
    put(t_decode=t_dec)
    t_pl = 0.0
    if decoded is not None and place is not None:
        send("phase", "place")
        t = time.perf_counter()
        place(state, decoded)
        t_pl = time.perf_counter() - t
    put(t_place=t_pl)
    put(t_path=sum(out.get(f"t_{p}") or 0.0 for p in ("goodput", "build", "handoff", "solve", "decode", "place")))
    send("phase", "lp_bound")
    put(**_sizes(model))
    put(**_lp_bound(model, threads))
    put(instance_hash=_instance_hash(inst, spec.problem))
    return out


def _child_main(conn: Any, task: dict[str, Any]) -> None:
    def send(kind: str, payload: Any) -> None:
        conn.send((kind, payload))

    try:
        fields = execute(task, send)
        fields["peak_rss_mb"] = _rss_mb()
        send("done", fields)
    except BaseException as exc:  # report every failure as a record, never hang the sweep
        tb = traceback.format_exc(limit=6)
        try:
            send("error", {"error": f"{type(exc).__name__}: {exc}", "traceback": tb, "peak_rss_mb": _rss_mb()})
        except Exception:
            pass
    finally:
        conn.close()


# ------------------------------------------------------------------------------------------------------ parent
def _kill_group(proc: Any) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _run_in_child(task: dict[str, Any], guard: float) -> dict[str, Any]:
    """Run ``task`` in ``python -m schedopt.bench.worker``; kill it ``guard`` seconds after it reports ready."""
    import pickle
    import subprocess
    import tempfile
    from multiprocessing.connection import Connection

    try:
        payload = pickle.dumps(list(sys.path)) + pickle.dumps(task)
    except Exception as exc:
        raise InputError("spec", task["spec"].name, f"its hooks must be picklable (module-level functions or "
                         f"'module:function' strings): {exc}") from exc
    rfd, wfd = os.pipe()
    errlog = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedopt.bench.worker", str(wfd)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errlog, pass_fds=(wfd,), close_fds=True,
        start_new_session=True,  # its own process group: a kill also takes any solver process it started
    )
    os.close(wfd)
    recv = Connection(rfd, writable=False)
    fields: dict[str, Any] = {}
    phase = "startup"
    deadline = start + _STARTUP_SECONDS
    final: tuple[str, Any] | None = None
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        while final is None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            if recv.poll(min(remaining, 0.25)):
                try:
                    kind, msg = recv.recv()
                except (EOFError, OSError):
                    final = ("died", None)
                    break
                if kind == "update":
                    fields.update(msg)
                elif kind == "phase":
                    phase = msg
                elif kind == "ready":
                    phase = "ready"
                    deadline = time.perf_counter() + guard
                elif kind in ("done", "error"):
                    final = (kind, msg)
            elif proc.poll() is not None and not recv.poll(0):
                final = ("died", None)
    finally:
        if final is None or final[0] == "died":
            _kill_group(proc)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a child that ignores its end
            proc.kill()
            proc.wait(timeout=30)
        recv.close()
        errlog.seek(0)
        err_tail = errlog.read()[-2000:].decode(errors="replace")
        errlog.close()
    wall = time.perf_counter() - start
    fields["t_wall"] = wall
    if final is None:
        where = "during startup" if phase == "startup" else f"in phase {phase!r}"
        fields.update(
            termination="guard",
            limit="guard",
            has_incumbent=False,
            outcome=f"guard: killed after {guard:g} s {where}, no incumbent",
            objective=None,
            bound=None,
            gap=None,
            error=f"wall-clock guard ({guard:g} s) hit {where}",
        )
    elif final[0] == "done":
        fields.update(final[1])
    else:
        payload = final[1] or {}
        msg = payload.get("error") or (
            f"the run's process died (exit code {proc.returncode}) in phase {phase!r}: {err_tail.strip()[-500:]}"
        )
        fields.update(termination="error", limit="", has_incumbent=False, outcome=f"error in phase {phase!r}",
                      objective=None, bound=None, gap=None, error=msg)
        if payload.get("peak_rss_mb") is not None:
            fields["peak_rss_mb"] = payload["peak_rss_mb"]
    fields.pop("traceback", None)
    return fields


def _sizes_arg(spec: BenchSpec, sizes: Sequence[int] | str | None) -> list[int]:
    if sizes is None or sizes == "default":
        return list(spec.sizes)
    if sizes == "large":
        return list(spec.large_sizes)
    if sizes == "all":
        return list(spec.sizes) + list(spec.large_sizes)
    if isinstance(sizes, str):
        try:
            return [int(s) for s in sizes.split(",") if s.strip()]
        except ValueError as exc:
            raise InputError("sizes", sizes, "must be GPU counts like '64,512,2048' or default/large/all") from exc
    out = []
    for i, s in enumerate(sizes):
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise InputError(f"sizes[{i}]", s, "must be a positive number of GPUs")
        out.append(int(s))
    return out


def _lp_gap(rec: Record) -> float | None:
    if rec.objective is None or rec.lp_bound is None or not math.isfinite(rec.objective):
        return None
    return abs(rec.objective - rec.lp_bound) / max(abs(rec.objective), 1e-10)


def run(
    spec_or_name: BenchSpec | str,
    sizes: Sequence[int] | str | None = None,
    seeds: Sequence[int] | None = None,
    backends: Sequence[str] | None = None,
    repeat: int = 1,
    time_limit: float | None = None,
    guard_seconds: float | None = None,
    threads: int = 1,
    progress: bool | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    loads: Sequence[str] | None = None,
    mip_rel_gap: float | None = None,
    solver_seed: int | None = None,
    on_record: Callable[[Record], None] | None = None,
    workers: int = 1,
    executor: Any = None,
) -> list[Record]:
    """Run a sweep: every (size, seed, load) x repetition x backend in its own process; one :class:`Record` each.

    ``sizes``: GPU counts, or ``"default"`` / ``"large"`` (4096-16384) / ``"all"``; ``backends`` default to the
    spec's, and those not installed here are skipped (see the returned records' absence and the warning on stderr).
    ``time_limit`` is the solver's own limit; ``guard_seconds`` (default ``2 * time_limit + 60``, or 600 s without a
    limit) is the wall-clock guard that kills a stuck run. ``progress``: a progress bar on stderr (``None``: only
    when stderr is a terminal). ``out``: a ``.csv`` / ``.jsonl`` path rewritten after every run.

    ``workers`` > 1 runs that many guarded runs at once (each still in its own process), on a local thread pool
    that drives the child processes, or on ``executor`` (anything with ``submit`` returning futures: a
    ``concurrent.futures`` pool, a Dask ``Client``, ...). Runs that share cores time each other: use it for sweeps
    whose point is the objective and the gap, keep ``workers=1`` for timings. Records keep the sweep order.
    """
    spec = get_spec(spec_or_name)
    size_list = _sizes_arg(spec, sizes)
    seed_list = list(spec.seeds if seeds is None else seeds)
    load_list = list(spec.loads if loads is None else loads) or [""]
    if not isinstance(repeat, int) or repeat < 1:
        raise InputError("repeat", repeat, "must be a positive integer")
    if not isinstance(threads, int) or threads < 0:
        raise InputError("threads", threads, "must be a non-negative integer")
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or time_limit <= 0):
        raise InputError("time_limit", time_limit, "must be a positive number of seconds or None")
    tl = time_limit if time_limit is not None else spec.params.get("time_limit")
    guard = float(guard_seconds) if guard_seconds is not None else (2.0 * tl + 60.0 if tl else 600.0)
    if guard <= 0:
        raise InputError("guard_seconds", guard_seconds, "must be positive")
    ok, skipped = spec.available_backends(backends)
    if backends is not None and not ok:
        raise InputError("backends", list(backends), f"none can run here: {skipped}")
    if skipped:
        print("schedopt bench: skipping " + "; ".join(f"{b} ({why})" for b, why in skipped.items()), file=sys.stderr)
    params = {
        "time_limit": tl,
        "mip_rel_gap": mip_rel_gap if mip_rel_gap is not None else spec.params.get("mip_rel_gap", 1e-6),
        "threads": threads,
        "solver_seed": solver_seed if solver_seed is not None else int(spec.params.get("solver_seed", 0)),
    }
    sweep = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    machine = machine_info()
    total = len(size_list) * len(seed_list) * len(load_list) * repeat * len(ok)
    bar = Progress(total, progress)
    if not isinstance(workers, int) or workers < 1:
        raise InputError("workers", workers, "must be a positive integer")
    tasks = [
        {"spec": spec, "gpus": gpus, "seed": seed, "load": load, "repeat": rep, "backend": backend, "params": params}
        for gpus in size_list
        for seed in seed_list
        for load in load_list
        for rep in range(repeat)
        for backend in ok  # interleaved: every backend sees the same conditions
    ]

    def label(task: dict[str, Any]) -> str:
        load = task["load"]
        return f"{spec.name} {task['gpus']} GPUs{' ' + load if load else ''} seed {task['seed']} #{task['repeat']} {task['backend']}"

    def record(task: dict[str, Any], fields: dict[str, Any]) -> Record:
        gpus, load, seed = task["gpus"], task["load"], task["seed"]
        rec = Record(
            sweep=sweep, spec=spec.name, problem=spec.problem,
            instance_id=f"{spec.problem}-{gpus}g{'-' + load if load else ''}-s{seed}",
            seed=seed, load=load, repeat=task["repeat"], gpus=gpus, backend=task["backend"],
            route="problemio" if isinstance(spec.pipeline, ProblemIOPipeline) else "schedopt",
            threads=threads, solver_seed=params["solver_seed"], time_limit=params["time_limit"],
            mip_rel_gap=params["mip_rel_gap"], guard_seconds=guard,
            timestamp=datetime.now(UTC).isoformat(timespec="seconds"), **machine,
        )
        known = set(Record.__dataclass_fields__)
        for k, v in fields.items():
            if k in known and v is not None:
                setattr(rec, k, v)
        rec.lp_gap = _lp_gap(rec)
        return rec

    done: dict[int, Record] = {}

    def finish(i: int, fields: dict[str, Any]) -> None:
        done[i] = record(tasks[i], fields)
        if on_record is not None:
            on_record(done[i])
        if out is not None:
            write_records([done[k] for k in sorted(done)], out)
        bar.update(label(tasks[i]), advance=1)

    try:
        if workers == 1 and executor is None:
            for i, task in enumerate(tasks):
                bar.update(label(task))
                finish(i, _run_in_child(task, guard))
        else:
            import concurrent.futures as cf

            pool = executor if executor is not None else cf.ThreadPoolExecutor(max_workers=workers)
            try:
                futures = [(i, pool.submit(_run_in_child, task, guard)) for i, task in enumerate(tasks)]
                if all(isinstance(f, cf.Future) for _, f in futures):
                    index = {f: i for i, f in futures}
                    for fut in cf.as_completed(index):
                        finish(index[fut], fut.result())
                else:  # another engine's futures (Dask, Ray): collect them in order
                    for i, fut in futures:
                        finish(i, fut.result())
            finally:
                if executor is None:
                    pool.shutdown()
    finally:
        bar.close()
    records = [done[k] for k in sorted(done)]
    if out is not None:
        write_records(records, Path(out))
    return records
