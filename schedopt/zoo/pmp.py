"""A pipeline-model-parallel application: the Sia artifact's Megatron-style GPT (``gpt_pmp.json``, written offline
by ``tools/derive_gpt_pmp.py``; issue 31 item 2).

One data-parallel replica is a pipeline of ``P`` GPUs (the scale unit: 2 on the A100, 8 on the RTX 2080Ti), so a job
holds a multiple of ``P`` GPUs and runs ``GPUs / P`` pipelines. Each iteration pushes ``M`` = 48 micro-batches of 1
sample through the pipeline; the published simulator's time per iteration (``applications.py``
``get_throughput`` for ``num_stages > 1`` and ``job.py`` ``Job.step``) is ``3 ((P - 1) + M) t_fwd`` with ``t_fwd``
the measured forward time of one stage for one micro-batch on that placement (the all-reduce ``sync_time`` is
returned beside it but not added by ``Job.step``; its policy's ``GoodputFunctionPMP`` adds a fitted network time).
Only measured placements run (the published lookup returns -1 elsewhere). The training curve is BERT's: the
artifact's ``gpt_pmp/validation-*.csv`` are byte-identical copies of BERT's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ..errors import InputError
from ..goodput import JobGoodputModel, ThroughputParams

__all__ = ["PIPELINE_APPS", "PipelineApplication", "gpt_pmp", "pipeline_application"]

#: The shipped pipeline-model-parallel applications (name -> loader).
PIPELINE_APPS = ("gpt_pmp",)


def _key(placement: Sequence[int]) -> str:
    p = tuple(int(x) for x in placement if int(x) > 0)
    if not p:
        raise InputError("placement", placement, "must hold at least one GPU")
    p = min(p[i:] + p[:i] for i in range(len(p)))
    return "".join(map(str, p))


@dataclass(frozen=True, eq=False)
class PipelineApplication:
    """A pipeline-parallel application's measured stage times per GPU type."""

    name: str
    microbatches: int
    microbatch_size: int
    epochs: int
    training_curve: str
    stages: dict[str, int]
    rows: dict[str, dict[str, dict[int, tuple[float, float]]]]  # type -> placement -> micro batch -> (fwd, sync)

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(sorted(self.stages))

    def scale_unit(self, gpu_type: str) -> int:
        """``P``: GPUs per pipeline on ``gpu_type`` (a job's GPU count is a multiple of it)."""
        if gpu_type not in self.stages:
            raise InputError("gpu_type", gpu_type, f"not profiled for {self.name}; have {list(self.gpu_types)}")
        return self.stages[gpu_type]

    def measured(self, gpu_type: str, placement: Sequence[int]) -> bool:
        return _key(placement) in self.rows.get(gpu_type, {})

    def iteration_time(self, gpu_type: str, placement: Sequence[int], microbatch_size: int | None = None,
                       with_sync: bool = False) -> float | None:
        """Seconds per iteration ``3 ((P - 1) + M) t_fwd`` (``+ sync`` with ``with_sync``), or ``None`` when the
        placement (or the GPU count, not a multiple of ``P``) was not measured."""
        P = self.scale_unit(gpu_type)
        if sum(int(x) for x in placement) % P:
            return None
        got = self.rows[gpu_type].get(_key(placement), {}).get(int(microbatch_size or self.microbatch_size))
        if got is None:
            return None
        fwd, sync = got
        return 3.0 * ((P - 1) + self.microbatches) * fwd + (sync if with_sync else 0.0)

    def batch(self, gpu_type: str, gpus: int) -> int:
        """Samples per iteration on ``gpus`` GPUs: pipelines x micro-batches x micro-batch size."""
        return (int(gpus) // self.scale_unit(gpu_type)) * self.microbatches * self.microbatch_size

    def throughput(self, gpu_type: str, placement: Sequence[int], with_sync: bool = False) -> float | None:
        """Samples per second at ``placement`` (``None`` where not measured)."""
        it = self.iteration_time(gpu_type, placement, with_sync=with_sync)
        return None if it is None else self.batch(gpu_type, sum(int(x) for x in placement)) / it

    @property
    def local_batch(self) -> int:
        """Samples per pipeline per iteration: ``M`` micro-batches of ``microbatch_size``."""
        return self.microbatches * self.microbatch_size

    def stage_time(self, gpu_type: str) -> float:
        """The forward time of one stage for one micro-batch on ``gpu_type``: the same in every measured placement
        of the artifact's tables (checked here; a table where it varied would need a per-placement truth)."""
        self.scale_unit(gpu_type)
        fwd = {v[self.microbatch_size][0] for v in self.rows[gpu_type].values() if self.microbatch_size in v}
        if len(fwd) != 1:
            raise InputError(f"{self.name}.rows[{gpu_type!r}]", sorted(fwd),
                             "the stage time differs between placements: no single pipeline time per type")
        return fwd.pop()

    def pipeline_time(self, gpu_type: str) -> float:
        """Seconds per iteration of one pipeline on ``gpu_type``, ``3 ((P - 1) + M) t_fwd`` (any measured
        placement: the stage time does not depend on it)."""
        return 3.0 * ((self.scale_unit(gpu_type) - 1) + self.microbatches) * self.stage_time(gpu_type)

    def goodput_model(self) -> JobGoodputModel:
        """The application as a data-parallel :class:`~schedopt.goodput.JobGoodputModel` whose *replica is one
        pipeline*: per GPU type a :class:`~schedopt.goodput.ThroughputParams` with ``beta_c = pipeline_time /
        local_batch`` and no network term, so ``step_time(nodes, pipelines, local_batch)`` is exactly
        :meth:`pipeline_time` (the published ``Job.step`` adds no sync time for pipelines); local batch fixed at
        ``local_batch``; the batch limits and gradient statistics of its training curve's application (BERT's).
        Callers pass pipelines (``GPUs // scale_unit(type)``) as replicas."""
        from .. import zoo

        curve = zoo.load_model(self.training_curve)
        params = {t: ThroughputParams(0.0, self.pipeline_time(t) / self.local_batch, 0.0, 0.0, 0.0, 0.0, 1.0)
                  for t in self.gpu_types}
        lims = {t: (self.local_batch, self.local_batch) for t in self.gpu_types}
        return JobGoodputModel(self.name, params, curve.init_batch, curve.max_batch, lims, curve.grad_batch,
                               curve.grad_sqr, curve.grad_var, self.epochs,
                               {"scale_units": dict(self.stages), "training_curve": self.training_curve})


def pipeline_application(name: str) -> PipelineApplication | None:
    """The shipped pipeline application ``name`` (``None`` for a data-parallel application)."""
    return gpt_pmp() if name == "gpt_pmp" else None


@cache
def gpt_pmp() -> PipelineApplication:
    """The Sia artifact's 2.8B-parameter GPT with pipeline parallelism (A100: P = 2, RTX 2080Ti: P = 8)."""
    doc: dict[str, Any] = json.loads(resources.files(__package__).joinpath("gpt_pmp.json").read_text())
    rows: dict[str, dict[str, dict[int, tuple[float, float]]]] = {}
    for t, d in doc["gpu_types"].items():
        for pid, b, fwd, sync in d["placements"]:
            rows.setdefault(t, {}).setdefault(_key([int(c) for c in pid]), {})[int(b)] = (float(fwd), float(sync))
    return PipelineApplication(doc["name"], int(doc["microbatches"]), int(doc["microbatch_size"]), int(doc["epochs"]),
                               str(doc["training_curve"]), {t: int(d["stages"]) for t, d in doc["gpu_types"].items()},
                               rows)
