"""Bad input never crashes, hangs or answers wrongly (issue 20): every public constructor, loader and
``schedopt.solve`` parameter, given a bad value in one field, either works or raises a SchedoptError subclass, fast.

The default run tries each field's core bad values (``schedopt.testing.fuzz.CORE``: a wrong type, a non-finite
number, a sign, a huge size) as hypothesis explicit examples, with a time limit of ten times the valid call's own
time (at least 0.3 s); the whole file takes about 30 s. The fields that fail today are marked ``xfail(strict=True)``
with the failure: when its fix lands the test passes, strict xfail turns that into a failure, and the mark is removed.

The longer run, for a scheduled job, is the hypothesis profile ``fuzz-long``, selected by an environment variable::

    SCHEDOPT_FUZZ_PROFILE=long SCHEDOPT_FUZZ_EXAMPLES=1000 python -m pytest tests/test_fuzz.py -m slow -p no:cacheprovider

It tries every field's whole catalog plus drawn values (any float, integer, short text, list; 5 s per input) and runs
the slow entry points and ``test_long_fuzz`` (which ``-m slow`` alone selects in the default run). ``python -m schedopt.testing.fuzz``
surveys every catalog case and prints one reproduction line per failure.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from hypothesis import Phase, example, given, settings

from schedopt.errors import SchedoptError
from schedopt.testing import fuzz

if not hasattr(signal, "setitimer"):  # the per-input time limit needs SIGALRM
    pytest.skip("needs signal.setitimer (POSIX)", allow_module_level=True)

ENTRIES = {e.name: e for e in fuzz.entry_points()}
LONG = os.environ.get("SCHEDOPT_FUZZ_PROFILE", "") == "long"
LONG_EXAMPLES = int(os.environ.get("SCHEDOPT_FUZZ_EXAMPLES", "1000" if LONG else "300"))
settings.register_profile("fuzz-default", database=None, deadline=None, phases=[Phase.explicit])
settings.register_profile("fuzz-long", database=None, deadline=None, max_examples=LONG_EXAMPLES,
                          phases=[Phase.explicit, Phase.generate])
PROFILE = settings.get_profile("fuzz-long" if LONG else "fuzz-default")
# the long run is slow as a whole: every test of this file is marked so that ``-m slow`` selects all of them (the
# default ``-m 'not slow'`` then selects none: the long run is asked for by name); in the default run only the slow
# entry points and test_long_fuzz are marked
pytestmark = [pytest.mark.slow] if LONG else []


def _x(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"issue 20: {reason}")


# What fails today (issue 20), found by this file's own cases; the first failing values of each field, the
# test's message lists all. Regenerate after fixes: python -m schedopt.testing.fuzz (or run with --runxfail).
KNOWN: dict[tuple[str, str], str] = {}
DOCUMENT_KNOWN: dict[tuple[str, str], str] = {}
FILE_KNOWN: dict[tuple[str, str], str] = {}


# Entry points whose valid input fails for a reason outside issue 20 (their every case then fails too).
WAITING: dict[str, str] = {}


def _marks(reason: str | None, slow: bool = False, waiting: str | None = None) -> list[pytest.MarkDecorator]:
    marks = [pytest.mark.xfail(strict=True, reason=waiting)] if waiting else [_x(reason)] if reason else []
    return [*marks, pytest.mark.slow] if slow and not LONG else marks


FIELD_PARAMS = [pytest.param(name, f, id=f"{name}:{f}", marks=_marks(KNOWN.get((name, f)), e.slow, WAITING.get(name)))
                for name, e in ENTRIES.items() for f in e.fields]
VALID_PARAMS = [pytest.param(name, id=name, marks=_marks(None, False, WAITING.get(name))) for name in ENTRIES]


def _limit(entry: fuzz.EntryPoint) -> float:
    """Warm the entry point up (imports, caches) and return the per-case time limit: ten times its valid call."""
    first = fuzz.run_case(entry, None, 60.0)
    assert first.status == "ok", first.repro()
    t0 = time.perf_counter()
    again = fuzz.run_case(entry, None, 60.0)
    assert again.status == "ok", again.repro()
    return max(0.3, 10 * (time.perf_counter() - t0))


@pytest.mark.parametrize("name", VALID_PARAMS)
def test_valid_input_works(name: str) -> None:
    """Each entry point's valid input works: the bad-value tests below start from it."""
    assert fuzz.run_case(ENTRIES[name], None, 60.0).status == "ok"


@pytest.mark.parametrize(("name", "field"), FIELD_PARAMS)
def test_bad_value_is_a_named_error(name: str, field: str) -> None:
    entry = ENTRIES[name]
    limit = 5.0 if LONG else _limit(entry)
    if LONG:
        assert fuzz.run_case(entry, None, 60.0).status == "ok"
    core = fuzz.all_cases(entry, field, only_core=not LONG)
    outcomes: list[fuzz.Outcome] = []

    @settings(PROFILE)
    @given(fuzz.cases(entry, field, generated=LONG))
    def explore(case: fuzz.Case) -> None:
        if any(o.status == "hang" for o in outcomes):
            return  # one hang is enough: do not wait for the next
        outcomes.append(fuzz.run_case(entry, case, limit))

    for case in reversed(core):  # hypothesis runs explicit examples innermost-first: keep the catalog order
        explore = example(case)(explore)
    explore()
    assert len(outcomes) >= len(core) or any(o.status == "hang" for o in outcomes)
    failed = [o.repro() for o in outcomes if o.failed]
    assert not failed, f"{len(failed)} of {len(outcomes)} bad values not handled:\n" + "\n".join(failed)


DOC_CORE = ("'abc'", "NaN", "10**30", "-1", "unknown key")
DOC_PARAMS = [pytest.param(p, fam, id=f"{p}:{fam}", marks=_marks(DOCUMENT_KNOWN.get((p, fam))))
              for p in fuzz.DOCUMENT_SOURCES for fam in ("types", "numbers", "keys")]


@pytest.mark.parametrize(("problem", "family"), DOC_PARAMS)
def test_instance_document_mutation_is_a_named_error(problem: str, family: str) -> None:
    """Each leaf of a generated instance document (lists through their first element) replaced by another JSON
    type, a bad number or an unknown key: ``instances.from_document`` answers with a named error or an instance."""
    entry, data = fuzz.document_entry(problem)
    limit = _limit(entry)
    cases = [c for c in fuzz.document_cases(data, family) if c.bad.label in DOC_CORE]
    assert cases
    outcomes: list[fuzz.Outcome] = []
    for case in cases:
        outcomes.append(fuzz.run_document_case(problem, case, limit))
        if outcomes[-1].status == "hang":
            break  # one hang is enough: do not wait for the next
    failed = [o.repro() for o in outcomes if o.failed]
    assert not failed, f"{len(failed)} of {len(outcomes)} mutations not handled:\n" + "\n".join(failed)


FILE_PARAMS = [pytest.param(loader, label, id=f"{loader}:{label}", marks=_marks(FILE_KNOWN.get((loader, label))))
               for loader, labels in (("instances.load", fuzz.FILE_CASES), ("hived.load_hived_config", fuzz.YAML_CASES))
               for label in labels]


@pytest.mark.parametrize(("loader", "label"), FILE_PARAMS)
def test_bad_file_is_a_named_error(loader: str, label: str) -> None:
    out = fuzz.run_file_case(loader, label, 2.0)
    assert out.status == "named", out.repro()


# ------------------------------------------------------------------ the fuzzer itself can fail
def test_the_fuzzer_tells_a_named_error_from_a_raw_one_a_silent_one_and_a_hang() -> None:
    def f(x: object) -> object:
        if x == "named":
            raise SchedoptError("named")
        if x == "raw":
            raise ValueError("raw")
        if x == "hang":
            while True:
                pass
        return x

    entry = fuzz.EntryPoint("f", f, lambda: {"x": 1}, {"x": "count"})
    status = {label: fuzz.run_case(entry, fuzz.Case("x", fuzz.Bad(label, label)), 0.2).status
              for label in ("named", "raw", "hang")}
    assert status == {"named": "named", "raw": "raw", "hang": "hang"}
    assert fuzz.run_case(entry, fuzz.Case("x", fuzz.Bad("nan", float("nan")))).status == "silent"
    assert fuzz.run_case(entry, fuzz.Case("x", fuzz.Bad("'3'", "3", reject=False))).status == "ok"


def test_the_honesty_check_catches_a_lying_result() -> None:
    """``fuzz.lies`` on real solves of the knapsack (optimum 9 at x = (0, 1, 1)): an honest result passes, a result
    whose bound is beaten by a feasible solution and an INFEASIBLE claim on a feasible model do not."""
    import copy

    import schedopt

    model = schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[7], col_upper=1, integrality=1,
                                             sense="maximize")
    good = schedopt.solve(model, "highs")
    ref = schedopt.solve(model, "scipy")
    assert good.objective == pytest.approx(9.0) and fuzz.lies(model, good, ref) is None
    low_bound = copy.copy(good)
    object.__setattr__(low_bound, "bound", 8.0)  # claims no solution above 8
    assert "beaten by a solution of value 9" in (fuzz.lies(model, low_bound, ref) or "")
    relaxed = schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[-1], col_upper=1, integrality=1,
                                               sense="maximize")
    infeasible = schedopt.solve(relaxed, "highs")
    assert infeasible.termination.reason == schedopt.TerminationReason.INFEASIBLE
    assert "INFEASIBLE, but" in (fuzz.lies(model, infeasible, ref) or "")


def test_default_cases_cover_every_kind_and_every_category() -> None:
    kinds = {k for e in ENTRIES.values() for k in e.fields.values()}
    assert kinds <= set(fuzz.CATALOG)
    labels = {b.label for k in kinds for b in fuzz.core(k)}
    for category in ("None", "nan", "inf", "-1", "0", "'abc'", "2**64", "10**18", "[]"):
        assert category in labels, category


# ------------------------------------------------------------------ the longer run
@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(None, True, WAITING.get(n))) for n in ENTRIES])
def test_long_fuzz(name: str) -> None:
    """The whole catalog and drawn values (any float, integer, short text, list) on every field of ``name``, 5 s per
    input; ``SCHEDOPT_FUZZ_EXAMPLES`` sets the number of inputs (300; 1000 under ``SCHEDOPT_FUZZ_PROFILE=long``)."""
    entry = ENTRIES[name]
    assert fuzz.run_case(entry, None, 60.0).status == "ok"
    failed: list[fuzz.Outcome] = []

    @settings(PROFILE, max_examples=LONG_EXAMPLES, phases=[Phase.generate])
    @given(fuzz.cases(entry, generated=True))
    def explore(case: fuzz.Case) -> None:
        out = fuzz.run_case(entry, case, 5.0)
        if out.failed:
            failed.append(out)

    explore()
    new = [o.repro() for o in failed if o.case is not None and (name, o.case.field) not in KNOWN]
    assert not new, "failures in fields not known to fail:\n" + "\n".join(new)
    if failed:
        pytest.xfail(f"{len(failed)} failing inputs, all in fields known to fail (see KNOWN)")


# ------------------------------------------------------------------ regressions found by the long run
def test_sia_generate_instance_on_a_huge_cluster_is_a_named_error_not_a_hang() -> None:
    """The long run: sia.generate_instance(gpus=362880) (181,440 default jobs) ran 34 s, and 65,536 GPUs 16 s (a
    current-configuration scan over the whole config table per job, now over its rows of <= 16 GPUs only, with the
    same draws). The generator now draws at most MAX_JOBS = 8,192 jobs; past it the error names ``gpus`` when the
    job count was derived from it, ``jobs`` otherwise, at once."""
    from schedopt import sia
    from schedopt.errors import InputError
    from schedopt.sia.generate import MAX_JOBS

    assert MAX_JOBS == 8192
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"gpus=362880: draws 181440 jobs at normal load"):
        sia.generate_instance(362880, 0)
    with pytest.raises(InputError, match=r"gpus=16384: draws 16384 jobs at heavy load"):
        sia.generate_instance(16384, 0, load="heavy")
    with pytest.raises(InputError, match=r"jobs=8193: must be <= MAX_JOBS = 8192"):
        sia.generate_instance(64, 0, jobs=8193)
    assert time.perf_counter() - t0 < 1.0
    assert len(sia.generate_instance(16384, 0).jobs) == 8192


def test_heterps_resource_limit_past_max_units_is_a_named_error_and_the_largest_allowed_is_fast() -> None:
    """The long run: heterps.ResourceType(limit=128629) then solve_greedy took over 5 s (each exact provisioning of a
    plan scans every (stage, k) level; 2**20 units took over 30 s). MAX_UNITS is now 2**16, levels below a stage's
    fastest are skipped (same answers), and at the limit the greedy answers in about a second."""
    import dataclasses

    from schedopt import heterps
    from schedopt.errors import InputError
    from schedopt.heterps.spec import MAX_UNITS

    with pytest.raises(InputError, match=r"ResourceType\(CPU\)\.limit=128629"):
        heterps.ResourceType("CPU", 0.04, 128629)
    p = heterps.generate("ctrdnn", 0, cpus=8, gpus=2)
    q = dataclasses.replace(p, types=(heterps.ResourceType("CPU", 0.04, MAX_UNITS), p.types[1]))
    t0 = time.perf_counter()
    r = heterps.solve_greedy(q)
    assert time.perf_counter() - t0 < 4.0
    assert r.has_solution and heterps.check_plan(q, r) == []


def test_synergy_generate_instance_on_a_huge_cluster_is_a_named_error_not_a_hang() -> None:
    """The long run: synergy.generate_instance(gpus=362880) plus a proportional allocation did not answer in 5 s
    (16,384 GPUs: 7 s). The generator now fills at most MAX_GENERATED_GPUS = 4,096 GPUs, a named error past it."""
    from schedopt import synergy
    from schedopt.errors import InputError

    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"gpus=362880: must be <= MAX_GENERATED_GPUS = 4096"):
        synergy.generate_instance(362880, 0)
    with pytest.raises(InputError, match=r"gpus=4104: must be <= MAX_GENERATED_GPUS"):
        synergy.generate_instance(4104, 0)
    assert time.perf_counter() - t0 < 1.0


def test_heterps_tiny_base_batch_is_a_named_error_not_a_zero_division() -> None:
    """The long run: HeterPSProblem(base_batch=2.2250738585072014e-308) was accepted and the greedy then raised
    ZeroDivisionError (every throughput B0 / tau underflowed to 0). The scalars now lie in [1e-30, 1e30]."""
    import dataclasses

    import schedopt
    from schedopt import heterps
    from schedopt.errors import InputError

    p = heterps.generate("ctrdnn", 0, cpus=8, gpus=2)
    with pytest.raises(InputError, match=r"^base_batch=2\.2250738585072014e-308: must be >= 1e-30"):
        dataclasses.replace(p, base_batch=2.2250738585072014e-308)
    with pytest.raises(InputError, match=r"^samples=1e\+300: must be <= 1e\+30"):
        dataclasses.replace(p, samples=1e300)
    # the edge itself is accepted: with the floor calibrated for B0 = 512 no plan reaches it, said as much
    r = heterps.solve_greedy(dataclasses.replace(p, base_batch=1e-30))
    assert r.termination.reason is schedopt.TerminationReason.NO_SOLUTION_FOUND and not r.has_solution
