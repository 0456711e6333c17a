"""``JobModel.oracle_apps``: the diagnostic that names deepspeech2's gap to the published Sia run (card: "deepspeech2
+15 %, named and measured")."""

from __future__ import annotations

import dataclasses

from schedopt.sia import Config
from schedopt.sim.jobs import SIA_MEASURED, JobModel, JobState, goodput_estimate, true_model


def _job(app: str, jm: JobModel) -> JobState:
    j = JobState("j", app, 0.0, 1, 20, True, jm, estimator="bootstrap")
    j.nodes, j.config = {"r-0": 2}, Config(1, 2, "rtx2080ti")
    j.rebatch()
    j.advance(0.0, 60.0)  # trains once: the bootstrap estimate has a measured row
    return j


def test_oracle_apps_shows_the_fitted_truth_for_those_applications_only() -> None:
    jm = dataclasses.replace(SIA_MEASURED, name="x", oracle_apps=frozenset({"deepspeech2"}))
    ds2, cif = _job("deepspeech2", jm), _job("cifar10", jm)
    assert ds2.seen and cif.seen
    assert goodput_estimate(ds2).params == true_model("deepspeech2").params
    assert goodput_estimate(cif).params != true_model("cifar10").params  # still the bootstrap refit
