"""Issue 41: the fuzz of the input surfaces added with the simulator platform (``schedopt.testing.fuzz.inputs``):
trace files of every format and ``schedopt trace``; HiveD's YAML loader, tenant quotas and ``hived/synthetic``; the
Gavel, Pollux and Shockwave packages. Every case runs in its own process (``schedopt.testing.fuzz.isolated``) with a
5 s limit and must give a named error, or an answer its check accepts: no raw exception, no silent answer, no hang.

The default run takes the core cases (``InputCase.core``: about fifty, the issue's own examples among them) in this
process, and checks the isolation itself; the whole catalog (about 900 cases, each in its own process: a few
minutes) is ``@pytest.mark.slow``, one test per surface. The survey prints one
reproduction line per failure::

    python -m schedopt.testing.fuzz --only inputs
"""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from schedopt.testing.fuzz import inputs
from schedopt.testing.fuzz.isolated import run_isolated

if not hasattr(signal, "setitimer"):  # the per-case time limit needs SIGALRM
    pytest.skip("needs signal.setitimer (POSIX)", allow_module_level=True)

SURFACES = sorted({c.surface for c in inputs.input_cases()})


def test_the_isolated_runner_tells_a_dead_process_and_a_deaf_hang_from_a_named_error() -> None:
    """A child that exits mid-case is raw (exit code said); one that blocks SIGALRM and sleeps is killed by the parent
    and called a hang (a named error coming back as named: the core cases of the survey)."""
    reg = "schedopt.testing.fuzz.isolated"
    dead = run_isolated(reg, "selftest", "exit", 2.0)
    assert dead.status == "raw" and "exit code 3" in dead.detail
    deaf = run_isolated(reg, "selftest", "deaf hang", 0.5)
    assert deaf.status == "hang" and deaf.seconds < 10


def test_the_catalog_covers_every_surface_of_issue_41_part_a() -> None:
    want = {"traces.read_trace[philly]", "traces.read_trace[helios]", "traces.read_trace[acme]",
            "traces.read_trace[pai2020]", "traces.read_trace[pai2023]", "traces.read_trace[philly-csv]",
            "traces.read_trace[gavel]", "traces.read_trace[workload]", "cli trace convert", "cli trace stats",
            "hived.load_hived_config", "sim.hived.HivedCluster", "sim.hived.synthetic_trace", "gavel.from_document",
            "pollux.from_document", "gavel.GavelSpec", "pollux.PolluxSpec", "shockwave.ShockwaveSpec"}
    assert want <= set(SURFACES)
    kinds = Counter(c.expect for c in inputs.input_cases())
    assert kinds["named"] > 500 and kinds["ok"] > 30  # good inputs too: a reader refusing everything fails
    same_reader = {"traces.read_trace[pai2020]", "traces.read_trace[workload]", "traces.read_trace[acme]",
                   "traces.read_trace[pai2023]", "traces.read_trace[philly-csv]"}  # helios's CSV reader: its cores
    assert {c.surface for c in inputs.input_cases() if c.core} >= want - same_reader


def test_core_input_cases_are_named_or_answered_honestly() -> None:
    """The core cases in this process (each under its 5 s alarm; a process each would cost the default run a tenth
    of a second per case on a loaded machine): the slow test below runs every case in its own process."""
    outs = [inputs.run_input_case(c, 5.0) for c in inputs.input_cases() if c.core]
    assert len(outs) >= 40
    failed = [o.repro() for o in outs if o.failed]
    assert not failed, f"{len(failed)} of {len(outs)} inputs not handled:\n" + "\n".join(failed)


@pytest.mark.slow
@pytest.mark.parametrize("surface", SURFACES)
def test_every_input_case_is_named_or_answered_honestly(surface: str) -> None:
    outs = inputs.survey_inputs(5.0, surface)
    outs = [o for o in outs if o.entry == surface]
    assert outs
    failed = [o.repro() for o in outs if o.failed]
    assert not failed, f"{len(failed)} of {len(outs)} inputs not handled:\n" + "\n".join(failed)
