"""Preemption in the HiveD allocator: gang preemption of victims, lazy preemption, and opportunistic fair shares.

A mix-in of :class:`~schedopt.hived.BuddyAllocator` (it reads the allocator's ``phys``, ``jobs`` and ``vcs``):

* **victims** (hivedscheduler's ``collectPreemptionVictims``): every job running on a GPU a new placement takes is
  preempted whole (all its pods: gang preemption). Inside a VC a guaranteed job preempts the VC's jobs of lower
  priority (0..1000); any guaranteed job preempts the opportunistic pods on the GPUs its cells are bound to.
* **lazy preemption** (``lazyPreemptAffinityGroup``): a job submitted with ``lazy_preemption=True`` whose virtual
  GPUs a higher-priority job of its VC takes is not killed at once: it loses its virtual cells and keeps running
  as opportunistic on the same physical GPUs, and is preempted only if the new job's cells are bound onto them.
  If the new job cannot be placed, the lazy preemption is reverted.
* **fair shares** (a schedopt option, ``fair_share=True``; hivedscheduler has none): an opportunistic request that
  finds no free GPUs may preempt the opportunistic jobs of the VC furthest above its weighted max-min share of the
  GPUs guaranteed pods do not hold, while the requester stays within its own share.
"""

from __future__ import annotations

from typing import Any

from .priority import FREE_PRIORITY, OPPORTUNISTIC_PRIORITY, weighted_max_min

__all__ = ["PreemptionMixin"]


class PreemptionMixin:
    """Victims, lazy preemption and fair-share preemption (mixed into :class:`BuddyAllocator`)."""

    phys: Any
    jobs: dict[int, Any]
    vcs: list[Any]

    # ------------------------------------------------------------------ victims
    def victims_on(self, gpus: list[int], handle: int) -> list[int]:
        """The jobs (other than ``handle``) running on any of ``gpus``: each is preempted whole."""
        out = {self.phys.gpu_job[j] for j in gpus} - {-1, handle}
        return sorted(out)

    def preempt(self, handles: list[int], keep: set[Any] = frozenset()) -> None:  # type: ignore[assignment]
        """Release the victim jobs (virtual GPUs in ``keep`` pass to the preemptor and stay bound)."""
        for h in handles:
            self.release_job(self.jobs.pop(h), keep)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ lazy preemption
    def lazy_preempt(self, job: Any) -> list[tuple[Any, int]]:
        """Downgrade guaranteed ``job`` to opportunistic on its physical GPUs; returns its (virtual GPU, GPU)
        pairs, for :meth:`revert_lazy_preempt`."""
        pairs = list(zip(job.vcells, job.gpu_list()))
        for u, j in pairs:
            self.vfree_gpu(u)  # type: ignore[attr-defined]
            self.phys.set_gpu(j, job.handle, OPPORTUNISTIC_PRIORITY)
        job.vcells = []
        job.lazy_preempted = True
        return pairs

    def revert_lazy_preempt(self, job: Any, pairs: list[tuple[Any, int]]) -> None:
        for u, j in pairs:
            self.bind_path(u, self.phys.leaf_cells[j])  # type: ignore[attr-defined]
            self.vuse_gpu(u, job.handle, job.prio)  # type: ignore[attr-defined]
            self.phys.set_gpu(j, job.handle, job.prio)
        job.vcells = [u for u, _ in pairs]
        job.lazy_preempted = False

    # ------------------------------------------------------------------ opportunistic fair shares
    def opportunistic_usage(self) -> dict[str, int]:
        """GPUs held by opportunistic pods per VC (lazily preempted jobs included)."""
        use = {v.name: 0 for v in self.vcs}
        for j in self.jobs.values():
            if j.is_opportunistic:
                use[j.request.vc] += len(j.gpu_list())
        return use

    def opportunistic_shares(self, extra: dict[str, int] | None = None) -> dict[str, float]:
        """Weighted max-min shares of the healthy GPUs that guaranteed pods do not hold, for the current
        opportunistic usage (plus ``extra`` pending demand per VC)."""
        ph = self.phys
        healthy = sum(1 for j, leaf in enumerate(ph.leaf_cells)
                      if not ph.is_bad(leaf) and ph.gpu_prio[j] in (FREE_PRIORITY, OPPORTUNISTIC_PRIORITY))
        demand = {k: float(v) for k, v in self.opportunistic_usage().items()}
        for k, v in (extra or {}).items():
            demand[k] += v
        return weighted_max_min(healthy, demand, {v.name: float(v.weight) for v in self.vcs})

    def fair_share_victim(self, vc: str, need: int, ci: int) -> tuple[int | None, bool]:
        """``(victim, within_share)``: an opportunistic job of the VC furthest above its share on chain ``ci``
        (``None`` when none is above), and whether ``vc`` would stay within its own share."""
        share = self.opportunistic_shares({vc: need})
        usage = self.opportunistic_usage()
        if usage[vc] + need > share[vc] + 1e-9:
            return None, False
        over = [(usage[v] - share[v], h) for h, j in self.jobs.items()
                if j.is_opportunistic and j.ci == ci and (v := j.request.vc) != vc and usage[v] > share[v] + 1e-9]
        if not over:
            return None, True
        return max(over)[1], True
