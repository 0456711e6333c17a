"""Bad inputs of the surfaces added with the simulator platform (issue 41, part A): trace files of every format and
the ``schedopt trace`` command line; HiveD's YAML loader, tenant quotas and ``hived/synthetic`` workloads; the Gavel,
Pollux and Shockwave problem packages (their instance documents, spec knobs, solvers and checkers).

Every case is an :class:`InputCase`: a surface (``traces.read_trace[philly]``, ``gavel.from_document`` ...), a label,
what it must give (``named``: an InputError or another SchedoptError; ``ok``: an answer, checked by ``accept``;
``either``: an answer or a named error) and a call that makes its input in a fresh folder. An answer to a case that
must be named is ``silent``; an answer ``accept`` refuses (a trace whose job and skip counts do not add up to its
rows, a solver's answer its checker refuses or whose objective is not finite, a ``--json`` document that is not
strict JSON in the common envelope) is ``silent`` too; a readable input refused is ``raw``.

:func:`run_named_case` runs one case in this process (under :func:`~schedopt.testing.fuzz.time_limit`);
:func:`~schedopt.testing.fuzz.isolated.run_isolated` runs it in its own process; :func:`survey_inputs` runs them all,
each in its own process (``python -m schedopt.testing.fuzz --only inputs``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import io
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import CATALOG, CORE, Bad
from .runner import Case, CliExit, EntryPoint, Outcome, run_case

__all__ = ["MUTATIONS_PER_FORMAT", "PRELOAD", "InputCase", "find_case", "input_cases", "mutate", "run_named_case",
           "survey_inputs"]

#: the modules a case's process should find imported (the forkserver preloads them once)
PRELOAD = ("schedopt.traces", "schedopt.traces.cli", "schedopt.cli", "schedopt.gavel", "schedopt.pollux",
           "schedopt.shockwave", "schedopt.hived", "schedopt.sim.hived", "schedopt.instances", "yaml", "highspy")


@dataclass(frozen=True)
class InputCase:
    """One bad (or good) input of a surface; ``run(folder)`` makes the input in ``folder`` and calls the surface."""

    surface: str
    label: str
    expect: str  # "named" | "ok" | "either"
    run: Callable[[Path], Any]
    accept: Callable[[Any], str | None] | None = None
    core: bool = False  #: in the default test run (tests/test_fuzz_inputs.py)

    @property
    def reject(self) -> bool:
        return self.expect == "named"


# ============================================================================================== trace files
_HELIOS_HEAD = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def _helios_row(i: int, user: str = "", gpus: str = "1", duration: str = "600", submit: str = "") -> str:
    return (f"{1000 + i},{user or f'u{i}'},vc1,{gpus},1,1,COMPLETED,{submit or '2020-06-09 18:41:01'},"
            f"2020-06-09 18:41:01,2020-06-09 18:51:01,{duration},0")


def _helios(rows: list[str], nl: str = "\n") -> str:
    return nl.join([_HELIOS_HEAD, *rows]) + nl


def _philly_job(i: int, **kw: Any) -> dict[str, Any]:
    job: dict[str, Any] = {"status": "Pass", "vc": "vc1", "jobid": f"app_{i}", "user": "u1",
                           "submitted_time": "2017-10-07 01:11:39",
                           "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                                         "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]}
    job.update(kw)
    return job


def _attempt(**detail: Any) -> list[dict[str, Any]]:
    return [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23", "detail": [{"ip": "m1", **detail}]}]


def _write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _counts(jobs: int, skipped: int = 0) -> Callable[[Any], str | None]:
    """The answer must be a Trace of ``jobs`` jobs and ``skipped`` skipped rows, every field in range."""

    def accept(tr: Any) -> str | None:
        from ...traces import Trace

        if not isinstance(tr, Trace):
            return f"returned {type(tr).__name__}, not a Trace"
        if (len(tr), len(tr.skipped)) != (jobs, skipped):
            return f"read {len(tr)} jobs and {len(tr.skipped)} skipped rows, not {jobs} and {skipped}"
        for j in tr.jobs:
            if not (isinstance(j.gpus, int) and 0 <= j.gpus <= 2**16 and math.isfinite(j.submit_s)):
                return f"job {j.job_id}: gpus {j.gpus!r}, submit {j.submit_s!r}"
            if j.duration_s is not None and not (math.isfinite(j.duration_s) and j.duration_s >= 0):
                return f"job {j.job_id}: duration {j.duration_s!r}"
        return None

    return accept


def _read(fmt: str, name: str, data: bytes | str, *, skip_bad: bool = False) -> Callable[[Path], Any]:
    def run(d: Path) -> Any:
        from ... import traces

        return traces.read_trace(_write(d / name, data), fmt, skip_bad=skip_bad)

    return run


def _gz(text: str, cut: bool = False) -> bytes:
    data = gzip.compress(text.encode())
    return data[: len(data) // 2] if cut else data


def _philly_cases() -> Iterator[InputCase]:
    s = "traces.read_trace[philly]"
    two = json.dumps([_philly_job(0), _philly_job(1)])
    five = json.dumps([_philly_job(i) for i in range(5)])
    cut = five[: five.index(', {"status"', len(five) // 2 + 200)]
    el = [json.dumps(_philly_job(i)) for i in range(2)]

    def one(label: str, data: bytes | str, expect: str = "named", accept: Any = None, core: bool = False,
            skip_bad: bool = False, name: str = "log.json") -> InputCase:
        return InputCase(s, label, expect, _read("philly", name, data, skip_bad=skip_bad), accept, core)

    yield one("valid", two, "ok", _counts(2), core=True)
    yield one("valid .gz", _gz(two), "ok", _counts(2), name="log.json.gz")
    yield one("cut after an element", cut, core=True)
    yield one("cut inside an element", five[: len(five) // 2])
    yield one("trailing comma, then the end", two[:-1] + ",")
    yield one("two arrays back to back", two + "\n" + two, core=True)
    yield one("missing comma", f"[{el[0]} {el[1]}]")
    yield one("doubled comma", f"[{el[0]},,{el[1]}]")
    yield one("comma before ]", f"[{el[0]},]")
    yield one("an object, not an array", json.dumps({"jobs": []}))
    yield one("empty file", "")
    yield one("[1, 2]", "[1, 2]")
    yield one('"gpus": "gpu0,gpu1"', json.dumps([_philly_job(0, attempts=_attempt(gpus="gpu0,gpu1"))]), core=True)
    yield one('"gpus": "gpu0,gpu1" under skip_bad', json.dumps([_philly_job(0, attempts=_attempt(gpus="gpu0,gpu1")),
                                                              _philly_job(1)]), "ok", _counts(1, 1), skip_bad=True)
    yield one('"gpus": -3', json.dumps([_philly_job(0, attempts=_attempt(gpus=-3))]), core=True)
    yield one('"gpus": [1, 2]', json.dumps([_philly_job(0, attempts=_attempt(gpus=[1, 2]))]))
    yield one("attempts: [1]", json.dumps([_philly_job(0, attempts=[1])]), core=True)
    yield one("attempts: 'x'", json.dumps([_philly_job(0, attempts="x")]))
    yield one("detail: 5", json.dumps([_philly_job(0, attempts=[{"start_time": "2017-10-07 01:12:09",
                                                                 "end_time": "2017-10-07 01:13:23", "detail": 5}])]))
    yield one("nested 100,000 deep", "[" + "[" * 100_000 + "]" * 100_000 + "]", core=True)
    yield one("nested 100,000 deep objects", "[" + '{"a":' * 100_000 + "1" + "}" * 100_000 + "]")
    latin = json.dumps([_philly_job(0), _philly_job(1, user="caf\u00e9")], ensure_ascii=False).encode("latin-1")
    yield one("Latin-1 user name", latin, core=True)
    yield one("binary", bytes(range(256)) * 8)
    yield one("truncated .gz", _gz(json.dumps([_philly_job(i) for i in range(300)]), cut=True), name="log.json.gz",
              core=True)
    yield one("fake .gz", two, name="log.json.gz")
    yield one("submitted_time 'yesterday'", json.dumps([_philly_job(0, submitted_time="yesterday")]))
    yield one("submitted_time NaN", "[" + json.dumps(_philly_job(0)).replace('"2017-10-07 01:11:39"', "NaN") + "]")
    yield one("submitted_time 1e400", "[" + json.dumps(_philly_job(0)).replace('"2017-10-07 01:11:39"', "1e400") + "]")
    yield one("end before start", json.dumps([_philly_job(0, attempts=[{"start_time": "2017-10-07 01:12:09",
                                                                        "end_time": "2017-10-06 01:13:23"}])]))
    yield one("duplicate jobid", json.dumps([_philly_job(0), _philly_job(0)]))
    yield one("jobid an object", json.dumps([_philly_job(0, jobid={"a": 1})]))
    yield one("user a list", json.dumps([_philly_job(0, user=["a"])]))


def _csv_cases(fmt: str, head: str, row: Callable[..., str], name: str) -> Iterator[InputCase]:
    s = f"traces.read_trace[{fmt}]"

    def text(rows: list[str], nl: str = "\n") -> str:
        return nl.join([head, *rows]) + nl

    def one(label: str, data: bytes | str, expect: str = "named", accept: Any = None, core: bool = False,
            skip_bad: bool = False, fname: str = name) -> InputCase:
        return InputCase(s, label, expect, _read(fmt, fname, data, skip_bad=skip_bad), accept, core)

    ok3 = [row(i) for i in range(3)]
    yield one("valid", text(ok3), "ok", _counts(3), core=fmt == "helios")
    yield one("valid, \\r\\n line endings", text(ok3, "\r\n"), "ok", _counts(3))
    yield one("valid, UTF-8 byte-order mark", b"\xef\xbb\xbf" + text(ok3).encode(), "ok", _counts(3))
    yield one("valid .gz", _gz(text(ok3)), "ok", _counts(3), fname=name + ".gz")
    yield one("header only", head + "\n", "ok", _counts(0))
    yield one("empty file", "")
    rows = [row(i) for i in range(200)]
    quoted = list(rows)
    quoted[4] = quoted[4].replace(",u4,", ',"u4,') if ",u4," in quoted[4] else '"' + quoted[4]
    yield one("unterminated quote", text(quoted), core=fmt == "helios")
    yield one("unterminated quote under skip_bad", text(quoted), "ok", _counts(4, 196), skip_bad=True,
              core=fmt == "helios")
    yield one("a field over the CSV limit", text([row(0), row(1) + "x" * 200_000, row(2)]))
    yield one("a field over the CSV limit under skip_bad", text([row(0), row(1) + "x" * 200_000, row(2)]), "ok",
              _counts(2, 1), skip_bad=True)
    latin = text([row(0), row(1).replace(",", "\u00e9,", 1), row(2)]).encode("latin-1")
    yield one("Latin-1 user name", latin, core=fmt == "helios")
    yield one("binary", bytes(range(256)) * 8)
    yield one("NUL byte in a row", text([row(0), row(1).replace(",", "\x00,", 1)]))
    yield one("truncated .gz", _gz(text([row(i) for i in range(3000)]), cut=True), fname=name + ".gz",
              core=fmt == "helios")
    yield one("fake .gz", text(ok3), fname=name + ".gz")
    yield one("too few fields", text([row(0), ",".join(row(1).split(",")[:3])]))
    yield one("missing column", "a,b\n1,2\n")
    for label, kw in (("gpus -1", {"gpus": "-1"}), ("gpus 1.5", {"gpus": "1.5"}), ("gpus nan", {"gpus": "nan"}),
                      ("gpus 1e300", {"gpus": "1e300"}), ("gpus 'abc'", {"gpus": "abc"}),
                      ("duration -5", {"duration": "-5"}), ("duration 1e300", {"duration": "1e300"}),
                      ("duration inf", {"duration": "inf"}), ("submit 'yesterday'", {"submit": "yesterday"}),
                      ("submit 1e300", {"submit": "1e300"})):
        try:
            bad = row(0, **kw)
        except TypeError:  # this format has no such field
            continue
        yield one(label, text([bad, row(1)]), core=fmt == "helios" and label in ("gpus 1e300", "duration 1e300"))
    if fmt in ("helios", "acme", "pai2023"):
        yield one("duplicate job id", text([row(0), row(0)]))


def _acme_row(i: int, user: str = "", gpus: str = "1", duration: str = "600", submit: str = "") -> str:
    return (f"{1000 + i},{user or f'u{i}'},{gpus},COMPLETED,{submit or '2023-03-01 10:00:00'},"
            f"2023-03-01 10:00:00,2023-03-01 10:10:00,{duration}")


def _pai23_row(i: int, user: str = "", gpus: str = "1", duration: str = "600", submit: str = "") -> str:
    del user  # no user column
    sub = submit or "100"
    end = str(200 + float(duration)) if duration.replace(".", "").isdigit() else duration
    return f"pod-{i:04d},{gpus},1000,V100,Running,{sub},{end},200"


def _philly_csv_row(i: int, user: str = "", gpus: str = "1", duration: str = "600", submit: str = "") -> str:
    return f"{submit or '2017-10-07 01:11:39'},{duration},{gpus},1.0,{user or 'c1'}"


def _gavel_cases() -> Iterator[InputCase]:
    s = "traces.read_trace[gavel]"

    def line(job: str = "ResNet-18 (batch size 16)", steps: str = "3000", arrival: str = "0", scale: str = "1") -> str:
        return f"{job}\tcmd\t1\t0\t{steps}\t{arrival}\t{scale}"

    def one(label: str, data: bytes | str, expect: str = "named", accept: Any = None) -> InputCase:
        return InputCase(s, label, expect, _read("gavel", "x.trace", data), accept, core=label == "Latin-1 job type")

    yield one("valid", "\n".join([line(), line(arrival="10")]) + "\n", "ok", _counts(2))
    yield one("5 fields", "a\tb\tc\td\te\n")
    yield one("Latin-1 job type", (line() + "\n").encode() + (line(job="caf\u00e9") + "\n").encode("latin-1"))
    yield one("binary", bytes(range(256)) * 8)
    for label, kw in (("steps -1", {"steps": "-1"}), ("scale 1.5", {"scale": "1.5"}), ("arrival nan", {"arrival": "nan"}),
                      ("scale 1e300", {"scale": "1e300"}), ("steps 1e300", {"steps": "1e300"})):
        yield one(label, line(**kw) + "\n")


def _pai2020_cases() -> Iterator[InputCase]:
    s = "traces.read_trace[pai2020]"
    job = "j1,i1,u1,Terminated,100,700\n"
    task = "j1,worker,1,Terminated,100,700,600,29.0,50,V100\n"

    def folder(files: dict[str, bytes | str]) -> Callable[[Path], Any]:
        def run(d: Path) -> Any:
            from ... import traces

            (d / "pai").mkdir()
            for n, data in files.items():
                _write(d / "pai" / n, data)
            return traces.read_trace(d / "pai", "pai2020")

        return run

    yield InputCase(s, "valid", "ok", folder({"pai_job_table.csv": job, "pai_task_table.csv": task}), _counts(1))
    yield InputCase(s, "no task table", "named", folder({"pai_job_table.csv": job}))
    yield InputCase(s, "a file, not a folder", "named", _read("pai2020", "pai_job_table.csv", job))
    yield InputCase(s, "Latin-1 user", "named", folder({"pai_job_table.csv": "j1,i1,caf\u00e9,T,100,700\n".encode("latin-1"),
                                                      "pai_task_table.csv": task}))
    yield InputCase(s, "plan_gpu 1e300", "named", folder({"pai_job_table.csv": job,
                                                         "pai_task_table.csv": task.replace(",50,", ",1e300,")}))


def _other_trace_cases() -> Iterator[InputCase]:
    def detect(data: bytes | str, name: str) -> Callable[[Path], Any]:
        def run(d: Path) -> Any:
            from ... import traces

            return traces.read_trace(_write(d / name, data))

        return run

    s = "traces.read_trace[guessed]"
    yield InputCase(s, "an unknown header", "named", detect("a,b\n1,2\n", "x.csv"))
    yield InputCase(s, "binary .csv", "named", detect(bytes(range(256)) * 8, "x.csv"))
    yield InputCase(s, "fake .csv.gz", "named", detect("a,b\n", "x.csv.gz"))
    yield InputCase(s, "a folder without the PAI tables", "named",
                    lambda d: __import__("schedopt.traces", fromlist=["read_trace"]).read_trace(d))
    w = "traces.read_trace[workload]"
    head = "name,time,application,num_replicas,batch_size\n"
    yield InputCase(w, "Latin-1 name", "ok", _read("workload", "w.csv",
                                                   (head + "caf\u00e9,0,cifar10,2,256\n").encode("latin-1")), _counts(1))
    yield InputCase(w, "binary", "named", _read("workload", "w.csv", bytes(range(256)) * 8))
    yield InputCase(w, "truncated .gz", "named", _read("workload", "w.csv.gz", _gz(head + "j,0,cifar10,2,256\n" * 2000,
                                                                                     cut=True)))


def _trace_file_cases() -> Iterator[InputCase]:
    yield from _philly_cases()
    yield from _csv_cases("helios", _HELIOS_HEAD, _helios_row, "cluster_log.csv")
    yield from _csv_cases("acme", "job_id,user,gpu_num,state,submit_time,start_time,end_time,duration", _acme_row,
                          "trace_seren.csv")
    yield from _csv_cases("pai2023", "name,num_gpu,gpu_milli,gpu_spec,pod_phase,creation_time,deletion_time,"
                          "scheduled_time", _pai23_row, "openb_pod_list_x.csv")
    yield from _csv_cases("philly-csv", "timestamp,duration,num_gpus,gpu_time,cluster", _philly_csv_row, "philly.csv")
    yield from _gavel_cases()
    yield from _pai2020_cases()
    yield from _other_trace_cases()
    yield from _mutated_trace_cases()


#: how many seeded random mutations of a valid file each format gets (:func:`mutate`)
MUTATIONS_PER_FORMAT = 12

_MUTATION_BYTES = (b'"', b",", b"\n", b"\r", b"\x00", b"\xff", b"\xe9", b"[", b"]", b"{", b"}", b"\t", b"-", b"e999",
                   b"NaN", b"\xef\xbb\xbf")


def mutate(data: bytes, seed: int) -> bytes:
    """A seeded random damage of ``data``: one to three of cutting it short, flipping a byte, inserting or deleting
    a byte run (quotes, separators, brackets, NUL, bytes UTF-8 cannot decode, huge exponents), or doubling a line."""
    import random

    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if not out:
            break
        at = rng.randrange(len(out))
        op = rng.randrange(5)
        if op == 0:
            del out[at:]
        elif op == 1:
            out[at] = rng.randrange(256)
        elif op == 2:
            out[at:at] = rng.choice(_MUTATION_BYTES)
        elif op == 3:
            del out[at:at + rng.randint(1, 8)]
        else:
            start = out.rfind(b"\n", 0, at) + 1
            end = out.find(b"\n", at)
            end = len(out) if end < 0 else end + 1
            out[end:end] = out[start:end]
    return bytes(out)


def _sane(tr: Any) -> str | None:
    """Whatever a damaged file reads as, every job's fields are in range and its rows are distinct."""
    from ...traces import Trace

    if not isinstance(tr, Trace):
        return f"returned {type(tr).__name__}, not a Trace"
    rows = [j.row for j in tr.jobs]
    if len(set(rows)) != len(rows) or any(r < 1 for r in rows):
        return f"job rows {rows[:8]} repeat or are not positive"
    return _counts(len(tr), len(tr.skipped))(tr)


def _mutated_trace_cases() -> Iterator[InputCase]:
    """Seeded random damage (:func:`mutate`) of a valid file of each format, read with and without ``skip_bad``:
    a named error or a trace whose jobs are all in range (:func:`_sane`)."""
    valid = {
        "philly": ("log.json", json.dumps([_philly_job(i) for i in range(4)], indent=1)),
        "helios": ("cluster_log.csv", _helios([_helios_row(i) for i in range(6)])),
        "acme": ("trace.csv", "job_id,user,gpu_num,state,submit_time,start_time,end_time,duration\n"
                 + "".join(_acme_row(i) + "\n" for i in range(6))),
        "pai2023": ("pods.csv", "name,num_gpu,gpu_milli,gpu_spec,pod_phase,creation_time,deletion_time,scheduled_time\n"
                    + "".join(_pai23_row(i) + "\n" for i in range(6))),
        "philly-csv": ("philly.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n"
                       + "".join(_philly_csv_row(i) + "\n" for i in range(6))),
        "gavel": ("x.trace", "".join(f"ResNet-18 (batch size 16)\tcmd\t1\t0\t{3000 + i}\t{10 * i}\t1\n"
                                     for i in range(6))),
    }
    for fmt, (name, text) in valid.items():
        for k in range(MUTATIONS_PER_FORMAT):
            data = mutate(text.encode(), 1000 * k + len(fmt))
            skip = k % 2 == 1
            yield InputCase(f"traces.read_trace[{fmt}]", f"random damage {k}{' under skip_bad' if skip else ''}",
                            "either", _read(fmt, name, data, skip_bad=skip), _sane)


# ============================================================================================== the trace CLI
def _cli(argv: list[str]) -> str:
    """Run ``schedopt`` with ``argv``: stdout on exit 0; CliExit (named) on exit 2 or 3; an error (raw) on exit 4."""
    from ... import cli

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    except SystemExit as exc:  # argparse's usage error
        code = exc.code if isinstance(exc.code, int) else 2
    if code in (2, 3):
        if "--json" in argv:
            doc = json.loads(out.getvalue(), parse_constant=_no_constant)
            if doc.get("schema") != "schedopt.cli.error":
                raise RuntimeError(f"exit {code} with a --json document that is not an error: {doc.get('schema')}")
        raise CliExit(f"exit {code}: {err.getvalue().strip()[-200:]}")
    if code:
        raise RuntimeError(f"exit {code}: {err.getvalue().strip()[-300:]}")
    return out.getvalue()


def _no_constant(c: str) -> Any:
    raise ValueError(f"not strict JSON: {c}")


def _strict_envelope(command: str) -> Callable[[Any], str | None]:
    def accept(out: Any) -> str | None:
        try:
            doc = json.loads(out, parse_constant=_no_constant)
        except ValueError as exc:
            return f"--json printed no strict JSON document: {exc}"
        want = {"schema": f"schedopt.cli.{command.replace(' ', '_')}", "version": 1, "command": command, "exit_code": 0}
        got = {k: doc.get(k) for k in want}
        return None if got == want else f"the envelope is {got}, not {want}"

    return accept


def _trace_cli_cases() -> Iterator[InputCase]:
    rows = _helios([_helios_row(i) for i in range(3)])

    def conv(*extra: str, out: str = "w.csv") -> Callable[[Path], Any]:
        def run(d: Path) -> Any:
            src = _write(d / "cluster_log.csv", rows)
            return _cli(["trace", "convert", str(src), "-o", str(d / out) if out else str(d), "--rule", "pollux",
                         "--jobs", "1", "--start-h", "18", "--window-h", "2", *extra])

        return run

    def stats(*extra: str, data: str = rows) -> Callable[[Path], Any]:
        def run(d: Path) -> Any:
            src = _write(d / "cluster_log.csv", data)
            return _cli(["trace", "stats", str(src), *[x.replace("{d}", str(d)) for x in extra]])

        return run

    s, t = "cli trace convert", "cli trace stats"
    yield InputCase(s, "valid", "ok", conv())
    yield InputCase(s, "--seed -1", "named", conv("--seed", "-1"), core=True)
    yield InputCase(s, "-o a folder", "named", conv(out=""), core=True)
    yield InputCase(s, "-o in a missing folder", "named", conv(out="no/such/w.csv"))
    for flag, values in (("--seed", ("abc", "1.5", "2**64")), ("--jobs", ("0", "-1", "10**12", "1e3", "nan")),
                         ("--load", ("nan", "inf", "-1", "0", "1e300", "1e-300")),
                         ("--window-h", ("0", "inf", "nan", "1e300", "-1")), ("--start-h", ("-1", "nan", "inf")),
                         ("--app-map", ("garbage", "a=no-such-app")), ("--rule", ("nope",)),
                         ("--format", ("nope",)), ("--cluster", ("nope", ""))):
        for v in values:
            yield InputCase(s, f"{flag} {v}", "named", conv(flag, str(eval(v)) if "**" in v else v))
    yield InputCase(t, "valid --json", "ok", stats("--json"), _strict_envelope("trace stats"), core=True)
    yield InputCase(t, "one job --json (no arrival rate)", "ok", stats("--json", data=_helios([_helios_row(0)])),
                    _strict_envelope("trace stats"), core=True)
    yield InputCase(t, "header only --json", "ok", stats("--json", data=_HELIOS_HEAD + "\n"),
                    _strict_envelope("trace stats"))
    yield InputCase(t, "--plot fig.txt", "named", stats("--plot", "{d}/fig.txt"), core=True)
    yield InputCase(t, "--plot a folder", "named", stats("--plot", "{d}"))
    yield InputCase(t, "--cluster nope", "named", stats("--cluster", "nope"))
    yield InputCase(t, "a missing file --json", "named", lambda d: _cli(["trace", "stats", str(d / "no.csv"), "--json"]))

    def named(key: str) -> Callable[[Path], Any]:
        def run(d: Path) -> Any:
            from ... import sim

            src = _write(d / "cluster_log.csv", rows)
            return sim.load_workload(key.replace("{trace}", str(src)))

        return run

    def jobs_ok(w: Any) -> str | None:
        return None if len(w) >= 1 and all(math.isfinite(j.time) for j in w.jobs) else f"{len(w)} jobs"

    n = "sim.load_workload[named]"
    yield InputCase(n, "a trace at load 1", "ok", named("{trace}:load=1:rule=pollux:start_h=18:window_h=2:jobs=1"),
                    jobs_ok)
    for key in ("pollux@0.0001/0", "pollux@1000000/0", "pollux@1.5/4294967296", "saturn@0.00001/0",
                "{trace}:load=nan", "{trace}:seed=-1", "{trace}:jobs=0", "{trace}:window_h=inf", "{trace}:format=nope",
                "{trace}:rule=nope", "{trace}:bogus=1", "{trace}:load=abc", "{trace}:load=1e300",
                "{trace}:start_h=-1"):
        yield InputCase(n, key, "named", named(key), core=key in ("pollux@0.0001/0", "{trace}:seed=-1"))


# ============================================================================================== HiveD
def _hived_text() -> str:
    from importlib import resources

    return (resources.files("schedopt.sim.hived") / "tiny.yaml").read_text()


def _yaml(text: str) -> Callable[[Path], Any]:
    def run(d: Path) -> Any:
        from ... import hived

        return hived.load_hived_config(_write(d / "c.yaml", text))

    return run


def _laughs(levels: int, width: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(['"x"'] * width) + "]"]
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * width) + "]" for k in range(1, levels)]
    return "\n".join(lines) + f"\nphysicalCluster: *a{levels - 1}\n"


def _quota(nodes: int) -> Callable[[Path], Any]:
    def run(d: Path) -> Any:
        from ... import hived
        from ...sim import hived as sh

        text = _hived_text().replace("    - cellType: T-RACK.T-NODE\n      cellNumber: 1",
                                     f"    - cellType: T-RACK.T-NODE\n      cellNumber: {nodes}")
        cl, vcs = hived.load_hived_config(_write(d / "q.yaml", text))
        return sh.HivedCluster("q", cl, tuple(vcs)).gpus

    return run


def _hived_cases() -> Iterator[InputCase]:
    y = "hived.load_hived_config"
    yield InputCase(y, "valid (tiny)", "ok", _yaml(_hived_text()))
    yield InputCase(y, "billion laughs", "named", _yaml(_laughs(10)), core=True)
    yield InputCase(y, "billion laughs of mappings", "named",
                    _yaml("a0: &a0 {x: 1, y: 2}\n" + "".join(f"a{k}: &a{k} {{" + ", ".join(f"k{i}: *a{k - 1}"
                                                                                                   for i in range(10))
                                                               + "}\n" for k in range(1, 10)) + "physicalCluster: *a9\n"))
    yield InputCase(y, "recursive alias (sequence)", "named", _yaml("physicalCluster: &a [*a]\n"), core=True)
    yield InputCase(y, "recursive alias (mapping)", "named", _yaml("physicalCluster: &a\n  cellTypes: *a\n"))
    yield InputCase(y, "nested 100,000 deep", "named", _yaml("physicalCluster: " + "[" * 100_000 + "]" * 100_000 + "\n"))
    yield InputCase(y, "nested 300 deep", "named", _yaml("physicalCluster: " + "[" * 300 + "]" * 300 + "\n"))
    yield InputCase(y, "a merge key", "ok", _yaml(_hived_text().replace(
        "    T-PCIE:\n      childCellType: T\n", "    T-PCIE:\n      <<: {childCellType: T}\n")))
    yield InputCase(y, "binary", "named", _yaml(bytes(range(256)).decode("latin-1")))
    q = "sim.hived.HivedCluster"
    yield InputCase(q, "quota of 1 node on 2", "ok", _quota(1), lambda g: None if g == 8 else f"{g} GPUs, not 8")
    yield InputCase(q, "quota of 2 nodes on 2 (with the others' quota)", "named", _quota(2))
    yield InputCase(q, "quota of 5 nodes on 2", "named", _quota(5), core=True)

    w = "sim.hived.synthetic_trace"

    def synth(spec: str) -> Callable[[Path], Any]:
        def run(d: Path) -> Any:
            from ...sim import hived as sh

            p = sh.parse_workload(spec)
            tr = sh.synthetic_trace(sh.cluster_preset("tiny"), p["jobs"], 0, load=p["load"], failures=p["failures"],
                                    repair_h=p["repair_h"], long=p["long"])
            return tr

        return run

    def trace_ok(tr: Any) -> str | None:
        bad = [j.id for j in tr.jobs if not (math.isfinite(j.arrival) and 0 <= j.arrival <= 10 * 365 * 86400.0)]
        return f"jobs arrive at {[tr.jobs[0].arrival, tr.jobs[-1].arrival]}" if bad else None

    from ...sim.hived.workload import SYNTHETIC_BOUNDS, SYNTHETIC_PARAMS

    for key, (lo, hi, _) in SYNTHETIC_BOUNDS.items():
        integer = SYNTHETIC_PARAMS[key][1] is int
        for v in ("nan", "inf", "-inf", "-1", "0", "1e-300", "1e300", "abc", "", "1.5", "100000000", "0.5", "3"):
            try:
                x = float(v)
                good = math.isfinite(x) and lo <= x <= hi and (not integer or (x == int(x) and "." not in v
                                                                                 and "e" not in v))
            except ValueError:
                good = False
            if key == "jobs" and good and x > 2000:
                continue  # valid, but a long trace: the fuzz keeps each case short
            yield InputCase(w, f"{key}={v}", "either" if good else "named", synth(f"hived/synthetic:jobs=20:{key}={v}"
                                                                                  if key != "jobs" else
                                                                                  f"hived/synthetic:{key}={v}"),
                            trace_ok, core=(key, v) in (("failures", "100000000"), ("load", "1e-300")))
    yield InputCase(w, "failures=10000 (the bound)", "ok", synth("hived/synthetic:jobs=50:failures=10000"), trace_ok)


# ============================================================================================== the packages
def _gavel_data() -> dict[str, Any]:
    jobs = [{"id": f"j{i}", "throughputs": [1.0 + i, 2.0, 0.5 * (i + 1)], "scale_factor": 1, "priority_weight": 1.0,
             "steps_remaining": 1000.0 * (i + 1), "time_since_start": 10.0 * i, "slo": None} for i in range(3)]
    jobs[1]["slo"] = 5000.0
    return {"objective": "max_min", "types": ["v100", "p100", "k80"], "capacity": [1, 1, 2], "jobs": jobs,
            "costs": None, "efficient": True}


def _pollux_data() -> dict[str, Any]:
    def table(scale: float) -> list[list[float]]:
        return [[0.0] * 5, [0.0] + [scale * r for r in (1.0, 1.8, 0.0, 0.0)], [0.0, 0.0] + [scale * r for r in (1.9, 2.6, 3.2)]]

    return {"types": [{"name": "t4", "gpus_per_node": 2, "nodes": 2}], "p": -1.0, "scale": None, "max_nodes": 2,
            "max_replicas": 4,
            "jobs": [{"id": "a", "base": 1.0, "restart_factor": 0.9, "cap": 4, "rigid": 0, "current": {"t4-0": 1},
                      "goodput": {"t4": table(1.0)}},
                     {"id": "b", "base": 1.5, "restart_factor": 1.0, "cap": 2, "rigid": 0, "current": {},
                      "goodput": {"t4": table(1.2)}}]}


def _solved_honestly(out: Any) -> str | None:
    _, answer, violations = out
    if violations:
        return f"the checker refuses the answer: {violations[:2]}"
    if answer.has_solution and not math.isfinite(float(answer.objective_value)):
        return f"objective {answer.objective_value} with a solution"
    return None


def _document(problem: str, data_fn: Callable[[], dict[str, Any]]) -> Callable[[dict[str, Any]], Any]:
    def call(data: Any) -> Any:
        from ...instances import SCHEMA, VERSION, from_document
        from ...problem import SolveOptions, get_problem

        io_ = get_problem(problem)
        spec = from_document({"schema": SCHEMA, "version": VERSION, "problem": problem, "data": data})
        assert io_.solve is not None and io_.check is not None
        opts = SolveOptions(seed=0, options={"population": 8, "generations": 3}) if problem == "pollux" else \
            SolveOptions()
        answer = io_.solve(spec, opts)
        return spec, answer, io_.check(spec, answer)

    return call


def _on_copy(call: Callable[[Any], Any], data: dict[str, Any], folder: Path) -> Any:
    return call(copy.deepcopy(data))


def _document_cases() -> Iterator[InputCase]:
    from .documents import apply_document_case, document_cases

    for problem, data_fn in (("gavel", _gavel_data), ("pollux", _pollux_data)):
        call = _document(problem, data_fn)
        s = f"{problem}.from_document"
        data = data_fn()
        yield InputCase(s, "valid", "ok", functools.partial(_on_copy, call, data), _solved_honestly, core=True)
        for family in ("types", "numbers", "keys"):
            for case in document_cases(data, family):
                mutated = apply_document_case(data, case)
                yield InputCase(s, f"{case!r}", "named" if case.bad.reject else "either",
                                functools.partial(_on_copy, call, mutated), _solved_honestly)
        for label, path, value in (("slo NaN", ("jobs", 2, "slo"), math.nan), ("current 99 on a 2-GPU node",
                                                                               ("jobs", 0, "current", "t4-0"), 99),
                                   ("p = 1e7", ("p",), 1e7), ("p = -1e308", ("p",), -1e308)):
            if (problem == "gavel") != (label == "slo NaN"):
                continue
            m = copy.deepcopy(data)
            parent: Any = m
            for k in path[:-1]:
                parent = parent[k]
            parent[path[-1]] = value
            yield InputCase(s, label, "named", functools.partial(_on_copy, call, m), _solved_honestly, core=True)


def _shockwave_valid() -> dict[str, Any]:
    return {"jobs": ("a", "b", "c"), "gpus": 2, "scale_factors": [1, 2, 1], "step_seconds": [1.0, 1.0, 2.0],
            "steps_done": [20, 0, 5], "steps_total": [100, 100, 50], "age": [0.0, 30.0, 60.0],
            "ftf_target": [1000.0, 1000.0, 1000.0], "rounds": 2, "round_seconds": 10.0}


def _package_entries() -> list[EntryPoint]:
    def shockwave(**kw: Any) -> Any:
        from ... import shockwave as sw

        spec = sw.ShockwaveSpec(**kw)
        plan = sw.solve_spec(spec)
        return spec, plan, sw.check_plan(spec, plan)

    def pollux_knob(**kw: Any) -> Any:
        from ... import pollux
        from ...problem import SolveOptions

        spec = pollux.from_data(_pollux_data()).replace(**kw)
        a = pollux.solve_spec(spec, SolveOptions(seed=0, options={"population": 8, "generations": 3}))
        return spec, a, pollux.check_allocation(spec, a)

    def gavel_spec(**kw: Any) -> Any:
        from ... import gavel

        spec = gavel.from_data(_gavel_data()).replace(**kw)
        a = gavel.solve_spec(spec)
        return spec, a, gavel.check_allocation(spec, a)

    vec = ("scale_factors", "step_seconds", "steps_done", "steps_total", "age", "ftf_target")
    return [
        EntryPoint("shockwave.ShockwaveSpec", shockwave, _shockwave_valid,
                   {"gpus": "count", "rounds": "count", "round_seconds": "pos_float", "k": "nonneg_float",
                    "lam": "nonneg_float", "rho_max": "pos_float", "priority_finish": "nonneg_float",
                    "log_origin": "pos_float", **dict.fromkeys(vec, "vector3")}, accept=_solved_honestly),
        EntryPoint("pollux.PolluxSpec", pollux_knob, dict, {"p": "real", "scale": "pos_float?"},
                   accept=_solved_honestly),
        EntryPoint("gavel.GavelSpec", gavel_spec, dict,
                   {"capacity": "vector3", "objective": "choice"}, accept=_solved_honestly),
    ]


def _entry_cases() -> Iterator[InputCase]:
    for e in _package_entries():
        yield InputCase(e.name, "valid", "ok", functools.partial(_call_entry, e, None, None), e.accept, core=True)
        for f, kind in e.fields.items():
            core = set(CORE.get(kind, ()))
            for b in CATALOG[kind]:
                yield InputCase(e.name, f"{f}={b.label}", "named" if b.reject else "either",
                                functools.partial(_call_entry, e, f, b), e.accept,
                                core=b.label in core and f in ("rounds", "gpus", "p"))


def _call_entry(e: EntryPoint, field: str | None, bad: Bad | None, folder: Path) -> Any:
    kw = e.valid()
    if field is not None and bad is not None:
        kw[field] = bad.fresh()
    return e.call(**kw)


# ============================================================================================== registry and runs
@functools.cache
def input_cases() -> tuple[InputCase, ...]:
    """Every case, in a fixed order (the same in every process)."""
    out = [*_trace_file_cases(), *_trace_cli_cases(), *_hived_cases(), *_document_cases(), *_entry_cases()]
    seen: set[tuple[str, str]] = set()
    for c in out:
        key = (c.surface, c.label)
        assert key not in seen, f"two cases named {key}"
        seen.add(key)
    return tuple(out)


def find_case(surface: str, label: str) -> InputCase:
    """The input case ``label`` of ``surface`` (a KeyError naming both when there is none)."""
    for c in input_cases():
        if c.surface == surface and c.label == label:
            return c
    raise KeyError((surface, label))


def run_input_case(case: InputCase, timeout: float = 5.0) -> Outcome:
    """Run ``case`` in this process (in a fresh temporary folder) and classify the outcome (see the module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        entry = EntryPoint(case.surface, lambda: case.run(Path(tmp)), dict, {}, accept=case.accept)
        out = run_case(entry, None, timeout)
    c = Case("input", Bad(case.label, None, case.reject))
    status, detail = out.status, out.detail
    if status == "ok" and case.expect == "named":
        status, detail = "silent", "accepted"
    elif status == "named" and case.expect == "ok":
        status, detail = "raw", f"a valid input refused: {detail}"
    return Outcome(status, case.surface, c, detail, out.seconds)


def run_named_case(surface: str, label: str, timeout: float = 5.0) -> Outcome:
    """``run_input_case`` of the case named ``(surface, label)`` (the entry of :func:`~.isolated.run_isolated`)."""
    return run_input_case(find_case(surface, label), timeout)


def survey_inputs(timeout: float = 5.0, only: str | None = None, *, core: bool = False,
                  add: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run every case (``core``: the default test run's) whose surface contains ``only``, each in its own process."""
    from .isolated import run_isolated

    outs = []
    for c in input_cases():
        if (only and only != "inputs" and only not in c.surface) or (core and not c.core):
            continue
        o = run_isolated(__name__, c.surface, c.label, timeout, reject=c.reject)
        outs.append(o)
        if add is not None:
            add(o)
    return outs
