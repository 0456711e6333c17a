"""Model-free consistency checks of a :class:`~schedopt.hived.BuddyAllocator`'s state."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..problem import Violation
from .priority import FREE_PRIORITY, OPPORTUNISTIC_PRIORITY

__all__ = ["check_allocator"]


def check_allocator(al: Any) -> list[Violation]:
    """Every inconsistency of allocator ``al`` (``[]`` when consistent), recomputed from plain arrays: free flags
    and lists agree; hivedscheduler's health-blind lists hold the largest cells no bound cell touches; every GPU is covered exactly once by free, bound and set-aside failed cells; free cells are
    healthy and unbound; bound preassigned cells within quota, of their own level and chain; bindings mutual and
    mirroring the tree; each job's GPUs owned by it at its priority and (guaranteed) bound to its VC's virtual GPUs;
    no GPU held twice; used / opportunistic counters up to date."""
    cl, ph = al.cluster, al.phys
    bad: list[Violation] = []
    free = [c for c in range(cl.n_cells) if ph.is_free[c]]
    if sorted(free) != sorted(ph.free_cells()):
        bad.append(Violation("free_lists", "is_free flags and free lists differ"))
    roots = [u for u in al.roots if u.phys >= 0]
    cover = np.zeros(cl.num_gpus, dtype=np.int64)
    for c in free + [u.phys for u in roots] + [c for s in ph.bad_free.values() for c in s]:
        cover[ph.leaf_lo[c] : ph.leaf_hi[c]] += 1
    if (cover != 1).any():
        j = int(np.flatnonzero(cover != 1)[0])
        bad.append(Violation(f"gpus[{cl.gpus_of(int(cl.leaf_cells[j]))[0]}]",
                             f"covered {int(cover[j])} times by free, bound and failed cells"))
    for c in free:
        if ph.is_bad(c) or ph.bound[c] is not None:
            bad.append(Violation(f"cells[{cl.address[c]}]", "free but failed or bound"))
    cnt = np.zeros_like(al.table.total)
    for u in roots:
        cnt[u.vc, u.ci, u.level] += 1
        if ph.level[u.phys] != u.level or ph.ci[u.phys] != u.ci:
            bad.append(Violation(f"vcs[{al.vcs[u.vc].name}]", "root bound to a cell of another level / chain"))
    if (cnt > al.table.total).any():
        bad.append(Violation("vcs", "a VC holds more bound cells than its quota"))
    if set(al.bound_roots) != {u.phys for u in roots}:
        bad.append(Violation("bound_roots", "differs from the bound roots"))
    # hivedscheduler's health-blind lists: the largest cells that hold no bound root and lie in none
    boundset = {u.phys for u in roots}
    blind = []
    stack = [int(c) for c in np.flatnonzero(cl.parent < 0)]
    while stack:
        c = stack.pop()
        if c not in boundset:
            if not any(c <= r < ph.end[c] for r in boundset):
                blind.append(c)
            else:
                stack.extend(ph.children[c])
    if sorted(blind) != sorted(ph.blind.cells()) or sorted(ph.blind.cells()) != [
            c for c in range(cl.n_cells) if ph.blind.listed[c]]:
        bad.append(Violation("blind_lists", "hivedscheduler's free lists differ from the cells no bound cell touches"))
    for c in range(cl.n_cells):  # bindings mirror the tree
        u = ph.bound[c]
        if u is None:
            continue
        if u.phys != c or u.level != ph.level[c]:
            bad.append(Violation(f"cells[{cl.address[c]}]", "binding not mutual or across levels"))
        elif u.parent is not None and u.parent.phys != ph.parent[c]:
            bad.append(Violation(f"cells[{cl.address[c]}]", "bound below a virtual cell bound elsewhere"))
    used = [0] * cl.num_gpus
    for job in al.jobs.values():
        for j in job.gpu_list():
            used[j] += 1
            want = OPPORTUNISTIC_PRIORITY if job.is_opportunistic else job.prio
            if ph.gpu_job[j] != job.handle or ph.gpu_prio[j] != want:
                bad.append(Violation(f"jobs[{job.handle}]", f"GPU {j} owned by {ph.gpu_job[j]} at {ph.gpu_prio[j]}"))
        if not job.is_opportunistic:
            for u, j in zip(job.vcells, job.gpu_list()):
                if u.phys != ph.leaf_cells[j] or u.job != job.handle or al.vcs[u.vc].name != job.request.vc:
                    bad.append(Violation(f"jobs[{job.handle}]", f"virtual GPU not bound to GPU {j} of its VC"))
    for j in range(cl.num_gpus):
        if used[j] > 1:
            bad.append(Violation(f"gpus[{j}]", f"held by {used[j]} jobs"))
        if used[j] == 0 and (ph.gpu_job[j] != -1 or ph.gpu_prio[j] != FREE_PRIORITY):
            bad.append(Violation(f"gpus[{j}]", "owned by no running job but not idle"))
    opp = np.zeros(cl.n_cells, dtype=np.int64)
    use = np.zeros(cl.n_cells, dtype=np.int64)
    for j, leaf in enumerate(ph.leaf_cells):
        a = leaf
        while a >= 0:
            opp[a] += ph.gpu_prio[j] == OPPORTUNISTIC_PRIORITY
            use[a] += ph.gpu_prio[j] != FREE_PRIORITY
            a = ph.parent[a]
    if opp.tolist() != ph.opp or use.tolist() != ph.used:
        bad.append(Violation("counters", "used / opportunistic GPU counts out of date"))
    return bad
