"""Bad input to the command line's and the engine's newer surfaces (issue 41), each case in its own process.

The surfaces: ``schedopt reproduce`` (its output folder, sections, workloads, workers and executor flags), the
executor flags of ``simulate``, ``bench`` and ``reproduce`` (``--executor``, ``--dask``, ``--ray``), the silent
choices of ``simulate`` / ``generate`` / ``solve`` (an empty or unknown cluster, an unknown backend, a policy spec's
backend, ``-o`` a file, seeds out of range), what the engine hands a policy and takes back from it (a policy given as
a class, a decision of the wrong container types, a policy that edits the placement it was handed), and a broken
plug-in entry point.

Each :class:`CommandCase` runs in a child process forked from this one (the imports paid once, every case isolated:
a hang, a crash or a changed global cannot touch the next) and is killed after the time limit. A command-line case
is ``schedopt.cli.main(argv)`` with stdout and stderr captured; a Python case is a function of this module. The
outcome (:class:`~schedopt.testing.fuzz.runner.Outcome`) is

* ``named`` -- exit 1, 2 or 3 with a ``schedopt ... error:`` line and no traceback (a Python case: a
  :class:`~schedopt.errors.SchedoptError`);
* ``ok`` -- it worked (exit 0), and the case is one that should;
* ``raw`` -- a traceback, exit 4, or any other exception;
* ``silent`` -- a bad input accepted (exit 0), or a Python case whose check of the result failed;
* ``hang`` -- no answer within the limit (the child is killed).

``python -m schedopt.testing.fuzz.commands [--timeout 5] [--only reproduce]`` runs them all and prints the counts;
:func:`schedopt.testing.fuzz.survey` includes them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runner import Outcome

__all__ = ["CommandCase", "main", "run_command_case", "run_command_cases"]  # COMMAND_CASES: the table (its repr is no page)


@dataclass(frozen=True)
class CommandCase:
    """One input: ``argv`` for ``schedopt`` (``{tmp}`` is a fresh folder holding ``afile``, a file, and ``tiny.csv``,
    a three-job workload; ``{closed}`` a TCP port nothing listens on) or ``call`` (a function of the folder that
    returns None when the result is right, else why not). ``reject``: the input is bad (exit 0 is silent)."""

    surface: str
    label: str
    argv: tuple[str, ...] = ()
    call: Callable[[Path], str | None] | None = None
    reject: bool = True
    codes: tuple[int, ...] = field(default=(1, 2, 3))  #: the exit codes that are a named refusal

    @property
    def name(self) -> str:
        return f"{self.surface}: {self.label}"


# ------------------------------------------------------------------ Python cases: the engine and the plug-ins
def _tiny_world() -> tuple[Any, Any, Any]:
    from ...sia import Cluster, Config, GpuType
    from ...sim import Workload, WorkloadJob

    cl = Cluster((GpuType("t4", 4, 2),))
    w = Workload("two", (WorkloadJob("a", 0.0, "cifar10", 1, 128), WorkloadJob("b", 0.0, "cifar10", 1, 128)))
    return cl, w, Config


def _wrong_decision(field_name: str, value: Callable[[list[str]], Any]) -> Callable[[Path], str | None]:
    def call(tmp: Path) -> str | None:
        from ...sim import Decision, simulate

        cl, w, _ = _tiny_world()

        class Wrong:
            name = "wrong"

            def decide(self, state: Any) -> Any:
                return Decision(**{field_name: value([j.id for j in state.jobs])})

        simulate(cl, w, Wrong(), job_model="sia", max_time=600.0)
        return "accepted"

    return call


def _policy_class(tmp: Path) -> str | None:
    from ...sim import simulate
    from ...sim.policies.fifo import FifoPolicy

    cl, w, _ = _tiny_world()
    simulate(cl, w, FifoPolicy, job_model="sia", max_time=600.0)  # type: ignore[arg-type]
    return "accepted"


def _decide_returns(value: Any) -> Callable[[Path], str | None]:
    def call(tmp: Path) -> str | None:
        from ...sim import simulate

        cl, w, _ = _tiny_world()

        class Odd:
            name = "odd"

            def decide(self, state: Any) -> Any:
                return value

        simulate(cl, w, Odd(), job_model="sia", max_time=600.0)
        return "accepted"

    return call


def _vandal(edit: Callable[[Any], object]) -> Callable[[Path], str | None]:
    """A policy that edits the previous placement it is handed must change nothing: the result equals a reader's."""

    def call(tmp: Path) -> str | None:
        from ...sim import Decision, simulate

        cl, w, config = _tiny_world()

        class Reader:
            name = "reader"

            def decide(self, state: Any) -> Any:
                return Decision(allocation={j.id: config(1, 1, "t4") for j in state.jobs})

        class Vandal(Reader):
            def decide(self, state: Any) -> Any:
                if state.placement is not None:
                    edit(state.placement)
                return super().decide(state)

        a = simulate(cl, w, Vandal(), job_model="sia", max_time=3 * 86400.0)
        b = simulate(cl, w, Reader(), job_model="sia", max_time=3 * 86400.0)
        same = [(j.id, j.start, j.finish, j.restarts) for j in a.jobs] == [(j.id, j.start, j.finish, j.restarts)
                                                                            for j in b.jobs]
        return None if same else "editing the handed placement changed the simulation"

    return call


def _broken_plugin(group: str, name: str, code: Callable[[], Any]) -> Callable[[Path], str | None]:
    """A distribution on the path whose entry point names a missing module: the error must name the plug-in."""

    def call(tmp: Path) -> str | None:
        d = tmp / "brokenplug41-0.1.dist-info"
        d.mkdir()
        (d / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug41\nVersion: 0.1\n")
        (d / "entry_points.txt").write_text(f"[{group}]\n{name} = nosuch_module_41:Thing\n")
        sys.path.insert(0, str(tmp))
        from ... import problem
        from ...errors import SchedoptError
        from ...sim import families, registry

        families._SYSTEM_EPS_LOADED = False  # this child forgets what its parent read: the registries read again
        problem._LOADED = False
        registry.reload_entry_points()

        try:
            code()
        except SchedoptError as exc:
            if name not in str(exc):
                return f"the error does not name the plug-in {name!r}: {exc}"
            raise
        return "a broken plug-in was not reported"

    return call


def _simulate_many_fifo() -> Any:
    from ...sim import simulate_many

    return simulate_many(["fifo"], ["saturn/1"], workers=1, progress=False, max_time=600.0)


def _get_sia() -> Any:
    from ...problem import get_problem

    return get_problem("sia")


def _reproduce_api(**kw: Any) -> Callable[[Path], str | None]:
    def call(tmp: Path) -> str | None:
        from ...reproduce import reproduce_sia

        k = dict(kw)
        reproduce_sia(k.pop("out", tmp / "r"), progress=False, log=lambda m: None, **k)
        return "accepted"

    return call


def _cut_result(tmp: Path) -> str | None:
    """A reproduce result cut to 5 lines is named and redone: the rerun's report equals the first."""
    from ...reproduce import Plan, reproduce_sia

    pl = Plan(False, ("saturn/1",), main_policies=("fifo",), truncate=1, only_apps=("cifar10",), estimator="oracle",
              job_model="sia")
    first = reproduce_sia(tmp, sections=["main"], workers=1, progress=False, the_plan=pl, log=lambda m: None)
    text = first.read_text()
    (f,) = sorted((tmp / "raw" / "main").glob("*.jsonl"))
    f.write_text("".join(f.read_text().splitlines(keepends=True)[:5]))
    said: list[str] = []
    again = reproduce_sia(tmp, sections=["main"], workers=1, progress=False, the_plan=pl, log=said.append)
    if not any(str(f) in m for m in said):
        return "the cut result was not named"
    keep = [ln for ln in text.splitlines() if "wall" not in ln]
    if [ln for ln in again.read_text().splitlines() if "wall" not in ln and "redone" not in ln] != keep:
        return "the report after the redo differs"
    return None


# ------------------------------------------------------------------ the catalog
def _cli(surface: str, label: str, *argv: str, reject: bool = True) -> CommandCase:
    return CommandCase(surface, label, tuple(argv), reject=reject)


_R = ("reproduce", "sia", "-o", "{tmp}/r", "--quick")
_S = ("simulate", "--policy", "fifo", "--workload", "{tmp}/tiny.csv", "--progress", "off")
_B = ("bench", "--problem", "heterps", "--sizes", "64", "-o", "{tmp}/b.csv")

#: Every bad-input case of the commands' surfaces (reproduce, executors, CLI choices, engine, plug-ins).
COMMAND_CASES: tuple[CommandCase, ...] = (
    # reproduce: output, sections, workloads, workers, executors
    _cli("reproduce", "-o a file", "reproduce", "sia", "-o", "{tmp}/afile", "--quick"),
    _cli("reproduce", "-o under a file", "reproduce", "sia", "-o", "{tmp}/afile/sub", "--quick"),
    _cli("reproduce", "-o empty", "reproduce", "sia", "-o", "", "--quick"),
    _cli("reproduce", "--sections ,", *_R, "--sections", ","),
    _cli("reproduce", "--sections ' '", *_R, "--sections", " "),
    _cli("reproduce", "--sections main,,load", *_R, "--sections", "main,,load"),
    _cli("reproduce", "--sections nope", *_R, "--sections", "nope"),
    _cli("reproduce", "--workloads ,", *_R, "--workloads", ","),
    _cli("reproduce", "--workloads nosuch/9", *_R, "--workloads", "nosuch/9"),
    _cli("reproduce", "--workers 0", *_R, "--workers", "0"),
    _cli("reproduce", "--workers 10**9", *_R, "--workers", "1000000000"),
    _cli("reproduce", "--workers x", *_R, "--workers", "x"),
    _cli("reproduce", "--dask host:notaport", *_R, "--dask", "host:notaport"),
    _cli("reproduce", "--dask a:b:c", *_R, "--dask", "a:b:c"),
    _cli("reproduce", "--dask closed port", *_R, "--dask", "127.0.0.1:{closed}"),
    _cli("reproduce", "--dask and --ray", *_R, "--dask", "h:1", "--ray"),
    _cli("reproduce", "--executor pigeon", *_R, "--executor", "pigeon"),
    _cli("reproduce", "--executor dask://", *_R, "--executor", "dask://"),
    _cli("reproduce", "--executor threads:0", *_R, "--executor", "threads:0"),
    _cli("reproduce", "--progress maybe", *_R, "--progress", "maybe"),
    CommandCase("reproduce", "sections=[]", call=_reproduce_api(sections=[])),
    CommandCase("reproduce", "sections=123", call=_reproduce_api(sections=123)),
    CommandCase("reproduce", "workers=-1", call=_reproduce_api(workers=-1)),
    CommandCase("reproduce", "executor=object()", call=_reproduce_api(executor=object())),
    CommandCase("reproduce", "the_plan='quick'", call=_reproduce_api(the_plan="quick")),
    CommandCase("reproduce", "out=None", call=_reproduce_api(out=None)),
    CommandCase("reproduce", "a result cut to 5 lines", call=_cut_result, reject=False),
    # executors of simulate and bench
    _cli("executors", "simulate --executor dask://a:b:c", *_S, "--executor", "dask://a:b:c"),
    _cli("executors", "simulate --dask host:notaport", *_S, "--dask", "host:notaport"),
    _cli("executors", "simulate --executor tcp://h:0", *_S, "--executor", "tcp://h:0"),
    _cli("executors", "simulate --executor tcp://h:99999", *_S, "--executor", "tcp://h:99999"),
    _cli("executors", "simulate --executor 'dask://[::1'", *_S, "--executor", "dask://[::1"),
    _cli("executors", "simulate --executor ray://h:x", *_S, "--executor", "ray://h:x"),
    _cli("executors", "simulate --executor processes:x", *_S, "--executor", "processes:x"),
    _cli("executors", "simulate --executor ''", *_S, "--executor", ""),
    _cli("executors", "simulate --dask closed port", *_S, "--dask", "127.0.0.1:{closed}"),
    _cli("executors", "bench --dask host:notaport", *_B, "--dask", "host:notaport"),
    _cli("executors", "bench --executor dask://a:b:c", *_B, "--executor", "dask://a:b:c"),
    _cli("executors", "bench --executor tcp://h", *_B, "--executor", "tcp://h"),
    # simulate's silent choices
    _cli("simulate", "--cluster ''", *_S, "--cluster", ""),
    _cli("simulate", "--cluster ' '", *_S, "--cluster", " "),
    _cli("simulate", "--cluster sia64", *_S, "--cluster", "sia64"),
    _cli("simulate", "--cluster sia-65", *_S, "--cluster", "sia-65"),
    _cli("simulate", "--cluster gandiva-100 (fifo)", *_S, "--cluster", "gandiva-100"),
    _cli("simulate", "--backend nope (fifo)", *_S, "--backend", "nope"),
    _cli("simulate", "--backend '' (fifo)", *_S, "--backend", ""),
    _cli("simulate", "--policy sia:backend=higs", *_S[:1], "--policy", "sia:backend=higs", *_S[3:]),
    _cli("simulate", "--policy ''", *_S[:1], "--policy", "", *_S[3:]),
    _cli("simulate", "--policy ,", *_S[:1], "--policy", ",", *_S[3:]),
    _cli("simulate", "--policy fifo:nope=1", *_S[:1], "--policy", "fifo:nope=1", *_S[3:]),
    _cli("simulate", "--policy fifo:backfill=maybe", *_S[:1], "--policy", "fifo:backfill=maybe", *_S[3:]),
    _cli("simulate", "--policy nosuch_mod_41:X", *_S[:1], "--policy", "nosuch_mod_41:X", *_S[3:]),
    _cli("simulate", "-o a file", *_S, "-o", "{tmp}/afile"),
    _cli("simulate", "-o ''", *_S, "-o", ""),
    _cli("simulate", "--seeds -1", *_S, "--seeds", "-1"),
    _cli("simulate", "--seeds 0-10**9", *_S, "--seeds", "0-1000000000"),
    _cli("simulate", "--seeds 2**32", *_S, "--seeds", "4294967296"),
    _cli("simulate", "--seeds ,", *_S, "--seeds", ","),
    _cli("simulate", "--workers 0", *_S, "--workers", "0"),
    _cli("simulate", "--round-seconds nan", *_S, "--round-seconds", "nan"),
    _cli("simulate", "--time-limit -1", *_S, "--time-limit", "-1"),
    _cli("simulate", "--resume without -o", *_S, "--resume"),
    _cli("simulate", "a tiny valid sweep", *_S, "--seeds", "0-1", reject=False),
    # generate and solve
    _cli("generate", "unknown problem", "generate", "nope", "-o", "{tmp}/g.json"),
    _cli("generate", "--seed -1 (gavel)", "generate", "gavel", "--seed", "-1", "-o", "{tmp}/g.json"),
    _cli("generate", "--seed -1 (pollux)", "generate", "pollux", "--seed", "-1", "-o", "{tmp}/g.json"),
    _cli("generate", "--seed 2**32", "generate", "sia", "--seed", "4294967296", "-o", "{tmp}/g.json"),
    _cli("generate", "--seed 2**32-1", "generate", "sia", "--seed", "4294967295", "--gpus", "64", "-o",
         "{tmp}/g.json", reject=False),
    _cli("generate", "--gpus 0", "generate", "sia", "--gpus", "0", "-o", "{tmp}/g.json"),
    _cli("generate", "--param x", "generate", "sia", "--param", "x", "-o", "{tmp}/g.json"),
    _cli("generate", "--param nope=1", "generate", "sia", "--param", "nope=1", "-o", "{tmp}/g.json"),
    _cli("solve", "--backend higs", "solve", "--backend", "higs", "example:heterps_unreachable.json"),
    _cli("solve", "--backend ''", "solve", "--backend", "", "example:heterps_unreachable.json"),
    _cli("solve", "--seed -1", "solve", "--seed", "-1", "example:heterps_unreachable.json"),
    _cli("solve", "a missing file", "solve", "{tmp}/nosuch.json"),
    # the engine: what it hands a policy and takes back
    CommandCase("engine", "policy=FifoPolicy (a class)", call=_policy_class),
    CommandCase("engine", "decide returns None", call=_decide_returns(None)),
    CommandCase("engine", "decide returns a dict", call=_decide_returns({"a": None})),
    CommandCase("engine", "Decision(nodes=[...])", call=_wrong_decision("nodes", lambda ids: [(i, {}) for i in ids])),
    CommandCase("engine", "Decision(nodes={job: [...]})",
                call=_wrong_decision("nodes", lambda ids: {i: [("t4-0", 1)] for i in ids})),
    CommandCase("engine", "Decision(allocation=[...])", call=_wrong_decision("allocation", lambda ids: list(ids))),
    CommandCase("engine", "Decision(allocation='a')", call=_wrong_decision("allocation", lambda ids: "a")),
    CommandCase("engine", "Decision(requests=(a, 1))", call=_wrong_decision("requests", lambda ids: (ids[0], 1))),
    CommandCase("engine", "Decision(rate=[1.0])", call=_wrong_decision("rate", lambda ids: [1.0])),
    CommandCase("engine", "Decision(restart=3.0)", call=_wrong_decision("restart", lambda ids: 3.0)),
    CommandCase("engine", "Decision(colocate=['a'])", call=_wrong_decision("colocate", lambda ids: ["a"])),
    CommandCase("engine", "a policy empties its handed slots", reject=False,
                call=_vandal(lambda p: [s.clear() for s in p.assignments.values()])),
    CommandCase("engine", "a policy appends a GPU to its handed slots", reject=False,
                call=_vandal(lambda p: [s.append(("t4-0", (3,))) for s in p.assignments.values()])),
    CommandCase("engine", "a policy deletes its handed configs", reject=False,
                call=_vandal(lambda p: p.configs.clear())),
    # plug-ins
    CommandCase("plug-ins", "a broken schedopt.sim_systems entry point",
                call=_broken_plugin("schedopt.sim_systems", "brokenfam41", _simulate_many_fifo)),
    CommandCase("plug-ins", "a broken schedopt.problems entry point",
                call=_broken_plugin("schedopt.problems", "brokenprob41", _get_sia)),
    CommandCase("plug-ins", "a broken schedopt.policies entry point",
                call=_broken_plugin("schedopt.policies", "brokenpol41",
                                    lambda: __import__("schedopt.sim", fromlist=["make_policy"]).make_policy(
                                        "brokenpol41"))),
)


# ------------------------------------------------------------------ running one case in its own process
def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def _prepare(tmp: Path) -> None:
    (tmp / "afile").write_text("a file, not a folder\n")
    from ...sim import Workload, load_workload

    w = load_workload("saturn/1")
    (tmp / "tiny.csv").write_text(Workload("tiny", tuple(j for j in w.jobs if j.application == "cifar10")[:3]).to_csv())


def _child(case: CommandCase, tmp: str, port: int, conn: Any) -> None:
    """Run ``case`` here (a forked child) and send back ``(kind, exit code or None, text)``."""
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(tmp)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if case.call is not None:
                from ...errors import SchedoptError

                try:
                    why = case.call(Path(tmp))
                except SchedoptError as exc:
                    conn.send(("named", None, f"{type(exc).__name__}: {exc}"))
                    return
                except Exception as exc:
                    conn.send(("raw", None, f"{type(exc).__name__}: {exc}"))
                    return
                conn.send(("silent" if why else "ok", None, why or ""))
                return
            from ...cli import main as cli_main

            argv = [a.replace("{tmp}", tmp).replace("{closed}", str(port)) for a in case.argv]
            try:
                code = cli_main(argv)
            except SystemExit as exc:  # argparse's usage errors
                code = int(exc.code) if isinstance(exc.code, int) else 2
            except Exception as exc:  # main() itself let something through: a bug
                conn.send(("raw", None, f"{type(exc).__name__}: {exc}"))
                return
        conn.send(("exit", code, err.getvalue()))
    finally:
        conn.close()


def _classify(case: CommandCase, kind: str, code: int | None, text: str) -> tuple[str, str]:
    if kind == "named" and not case.reject:
        return "raw", f"a valid input failed: {text}"
    if kind != "exit":
        return kind, text
    last = [ln for ln in text.strip().splitlines() if ln.strip()]
    line = last[-1] if last else ""
    if "Traceback" in text or code == 4:
        return "raw", f"exit {code}: {line}"
    if code == 0:
        return ("silent", "exit 0: the bad input was accepted") if case.reject else ("ok", "")
    if code in case.codes:
        if "error" not in text:
            return "silent", f"exit {code} without a message"
        return ("named", f"exit {code}: {line}") if case.reject else ("raw", f"a valid input failed: {line}")
    return "raw", f"exit {code}: {line}"


def run_command_case(case: CommandCase, timeout: float = 5.0) -> Outcome:
    """Run ``case`` in a forked child (killed after ``timeout`` seconds) and classify it."""
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="schedopt-fuzz41-") as tmp:
        _prepare(Path(tmp))
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(case, tmp, _closed_port(), send))
        t0 = time.perf_counter()
        proc.start()
        send.close()
        got = recv.poll(timeout)
        seconds = time.perf_counter() - t0
        if not got:
            proc.kill()
            proc.join(5)
            return Outcome("hang", case.name, None, f"no answer within {timeout} s", seconds)
        try:
            kind, code, text = recv.recv()
        except EOFError:  # the child died without an answer (a crash in C, os._exit)
            proc.join(5)
            return Outcome("raw", case.name, None, f"the process died (exit {proc.exitcode})", seconds)
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(1)
        status, detail = _classify(case, kind, code, text)
        return Outcome(status, case.name, None, " ".join(detail.split())[:200], seconds)


def run_command_cases(timeout: float = 5.0, only: str | None = None,
                      cases: Sequence[CommandCase] = COMMAND_CASES) -> list[Outcome]:
    """Every case (or those whose name contains ``only``), each in its own process."""
    # the first import of the simulator and the CLI here, so that each child forks with them paid
    from ... import cli, sim  # noqa: F401
    from ...sim import families

    families.systems()
    from ...sim.jobs import job_model
    from ...sim.policies import make_policy

    job_model("sia")  # the job model and the policies the cases run: loaded once, here
    make_policy("fifo")
    with contextlib.suppress(Exception):  # the figures' library too (reproduce draws one per section)
        from ...sim.plots import pyplot

        pyplot()
    return [run_command_case(c, timeout) for c in cases if not only or only in c.name]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m schedopt.testing.fuzz.commands``: run every case; exit 1 if one was raw, silent or hung."""
    ap = argparse.ArgumentParser(prog="python -m schedopt.testing.fuzz.commands", description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per case (default 5)")
    ap.add_argument("--only", default=None, help="cases whose name contains this text")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    outs = run_command_cases(args.timeout, args.only)
    for o in outs:
        if o.failed:
            print(o.repro(), flush=True)
    counts: dict[str, int] = {}
    for o in outs:
        counts[o.status] = counts.get(o.status, 0) + 1
    print(f"{len(outs)} cases in {time.perf_counter() - t0:.0f} s, each in its own process: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if any(o.failed for o in outs) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
