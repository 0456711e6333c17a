# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # One live decision: the state you have, the decision you get
#
# `schedopt.live` runs the simulator's policies over a cluster as it is now. You describe the cluster (named nodes of
# any size, their health, GPUs that failed) and the jobs (what runs where, what was measured), and ask
# `Session.decide(now)` for the next round's plan: per job an action (start, keep, resize, move, preempt, queue), the
# node names and GPU indices, and the batch size of adaptive jobs. The policy is the very object `schedopt.sim`
# runs, checked the same way.

# %%
import json
import tempfile
from pathlib import Path

from schedopt.live import (
    Action,
    ClusterState,
    JobProgress,
    JobSubmitted,
    LiveJob,
    Measurement,
    NodeDown,
    NodeState,
    Session,
)

# %% [markdown]
# ## The state you have
#
# Three A100 nodes (one lost GPU 3), a node of four T4s, and two jobs: `resnet` has been running on all of `a100-1`
# for a while (its measured step time at 8 GPUs is known), `bert` has just been submitted.

# %%
cluster = ClusterState((
    NodeState("a100-0", "a100", 8),
    NodeState("a100-1", "a100", 8),
    NodeState("a100-2", "a100", 8, failed_gpus=(3,)),
    NodeState("t4-0", "t4", 4),
))
state_file = Path(tempfile.mkdtemp()) / "session.json"
session = Session(cluster, "sia", round_duration=60.0, state_path=str(state_file))

running = LiveJob("resnet", "imagenet", submitted=0.0, requested_gpus=8, placement={"a100-1": tuple(range(8))},
                  measurements=(Measurement("a100", nodes=1, gpus=8, local_batch=128, step_time=0.42,
                                            sync_time=0.05),),
                  progress=0.3)
session.apply(JobSubmitted(0.0, running))
session.apply(JobSubmitted(0.0, LiveJob("bert", "bert", submitted=0.0)))

# %% [markdown]
# What the policy will see: the usable GPUs only (`a100-2` is a 7-GPU node now, its GPUs renumbered past the
# failed one; the plan maps them back).

# %%
print(session.cluster)

# %% [markdown]
# ## The decision you get

# %%
plan = session.decide(now=60.0)
for jp in plan.jobs.values():
    print(f"{jp.job_id:7s} {jp.action.value:7s} {jp.gpus} x {jp.gpu_type}  batch {jp.batch_size}  on {jp.placement}")

# %% [markdown]
# The running job keeps its GPUs unless the policy changes its allocation: Sia's growth rule counts the 8 GPUs it
# runs on (a running 8-GPU job is never capped at 1 GPU). The plan is saved: a new process restoring the file
# decides as this one would.

# %%
print(json.dumps(plan.to_dict()["jobs"][0]))
print(state_file.stat().st_size, "bytes saved")

# %% [markdown]
# ## The next round: progress, a node going down

# %%
session.apply(JobProgress(100.0, "bert", progress=0.05, epoch=0,
                          measurements=(Measurement("a100", 1, plan.jobs["bert"].gpus or 1, 12, 0.3, 0.02),)))
session.apply(NodeDown(110.0, "a100-1"))
plan2 = session.decide(now=120.0)
for jp in plan2.jobs.values():
    print(f"{jp.job_id:7s} {jp.action.value:7s} {jp.gpus} x {jp.gpu_type}  on {jp.placement}")

restored = Session.restore(str(state_file))
assert restored.decide(120.0).to_dict()["jobs"] == plan2.to_dict()["jobs"]

# %% [markdown]
# ## What this notebook shows

# %%
assert plan.jobs["resnet"].action in (Action.KEEP, Action.RESIZE) and plan.jobs["resnet"].gpus >= 8
assert ("a100-2", 3) not in {(n, g) for jp in plan.jobs.values() for n, gs in jp.placement.items() for g in gs}
assert "a100-1" not in {n for jp in plan2.jobs.values() for n in jp.placement}  # the node that went down
assert plan2.jobs["resnet"].action in (Action.START, Action.QUEUE)  # it lost its node: restarted elsewhere or waits
print("all claims hold")
