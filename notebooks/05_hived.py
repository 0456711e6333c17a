# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # HiveD: cells, virtual clusters, the buddy allocator and bad hardware
#
# HiveD (OSDI'20) models a cluster as a forest of multi-level *cells* (rack > node > socket > PCIe switch > GPU) and
# gives each tenant a *virtual cluster* (VC): a quota of cells per level. An assignment of VCs is *valid* when all
# their cells can be mapped one-to-one onto disjoint physical cells of the same level; the buddy allocator then
# binds virtual cells to physical ones lazily, at run time. We load the example config shipped with schedopt (in
# hivedscheduler's YAML format), check validity two ways, push a request sequence through the allocator, and mark
# a node bad.

# %%
from importlib import resources

from schedopt import hived

path = resources.files("schedopt.hived").joinpath("examples/example.yaml")
cluster, vcs = hived.load_hived_config(str(path))
print(cluster)
for chain in cluster.chain_names:
    ch = cluster.chains[chain]
    print(f"chain {chain}: levels {ch.levels}, cells per level:",
          {lvl: cluster.num_cells(chain, lvl) for lvl in range(1, ch.levels + 1)})
for vc in vcs:
    print(f"VC {vc.name}: {vc.cells}" + (f", pinned {list(vc.pinned)}" if vc.pinned else ""))

# %% [markdown]
# ## VC validity: HiveD's counting rule and the exact mapping model
#
# The counting rule walks each chain from the top level down, counting free cells after every VC's demand; the
# exact check solves the cell-mapping integer program (HiGHS) and returns an explicit mapping.

# %%
counting = hived.check_vc_assignment(cluster, vcs, "counting")
exact = hived.check_vc_assignment(cluster, vcs, "exact", backend="highs")
print("counting:", counting, "| left per level:", counting.left)
print("exact:   ", exact)
for vc, cells in exact.mapping.items():
    print(f"  {vc:<7} -> {cells}")
extra_nodes = hived.max_extra_quota(cluster, vcs, "V100-RACK", "V100-NODE")
extra_gpus = hived.max_extra_quota(cluster, vcs, "V100-RACK", "V100")
print(f"a new VC could still get {extra_nodes} more V100 node(s), or {extra_gpus} more single V100 GPUs")

# %% [markdown]
# ## The buddy allocator through a request sequence
#
# Guaranteed requests use their VC's quota; virtual cells bind to physical ones on first use, splitting the lowest
# free higher-level cell (buddies go on the free lists). Opportunistic requests take free cells outside the quota.

# %%
alloc = hived.BuddyAllocator(cluster, vcs)
requests = [
    hived.Request("team-z", "V100", 1, name="z-1gpu"),
    hived.Request("team-z", "V100", 1, name="z-1gpu-b"),
    hived.Request("team-y", "V100-RACK", 8, pods=2, name="y-2x8"),
    hived.Request("team-x", "K80-NODE", 4, name="x-k80"),
    hived.Request("team-z", "V100", 1, pods=2, name="z-2x1 (over quota)"),
    hived.Request("team-y", "V100-RACK", 4, priority="opportunistic", name="y-opp-4"),
]
outcomes = []
for req in requests:
    a = alloc.allocate(req)
    outcomes.append(a)
    where = ", ".join(f"{p.node}:{list(p.gpus)}" for p in a.pods) if a.ok else f"waits ({a.reason}): {a.message}"
    print(f"{req.name:<20} {req.kind:<13} -> {where}")
print()
print("bound cells:", alloc.bound_cells())
print("free lists: ", {f"{c}/L{k}": v for (c, k), v in alloc.free_lists().items() if v})
print("invariants: ", alloc.check_invariants() or "OK")

# %% [markdown]
# ## What a bad node does
#
# Marking a node bad removes its cells, and every cell containing it, from the usable hardware. team-y's quota is a
# whole V100 rack; with a node of each rack down (rack-a already holds team-x's pinned node), no healthy rack is
# left for it, and both checks say so, naming the VC. Marking the node healthy again restores the guarantee.

# %%
alloc.release(outcomes[0].handle)  # jobs finish while hardware fails
report = alloc.mark_bad("v100-b2")
print("after mark_bad(v100-b2):", report)
print("exact check with v100-b2 bad:", hived.check_vc_assignment(cluster, vcs, "exact", bad_nodes=["v100-b2"]))
more = alloc.allocate(hived.Request("team-y", "V100-RACK", 8, pods=2, name="y-2x8-more"))
print("team-y asks for two more 8-GPU pods:",
      ", ".join(f"{p.node}" for p in more.pods) if more.ok else f"waits ({more.reason}): {more.message}")
print("invariants:", alloc.check_invariants() or "OK")
healed = alloc.mark_healthy("v100-b2")
print("after mark_healthy(v100-b2):", healed)

# %% [markdown]
# ## Claims checked

# %%
assert counting.valid and exact.valid
assert [a.ok for a in outcomes] == [True, True, True, True, False, True]
assert outcomes[4].reason == "vc_quota"
assert all(p.node.startswith("v100-b") for p in outcomes[2].pods)  # team-y's rack quota bound to one rack
assert outcomes[0].pods[0].node == outcomes[1].pods[0].node  # buddies: the second GPU is the first's buddy
assert not report.valid and report.vc == "team-y" and report.cause == "bad_hardware"
assert not hived.check_vc_assignment(cluster, vcs, "exact", bad_nodes=["v100-b2"]).valid
assert all(p.node != "v100-b2" for p in more.pods)  # nothing is ever placed on the bad node
assert healed.valid
assert alloc.check_invariants() == []
print("all claims hold")
