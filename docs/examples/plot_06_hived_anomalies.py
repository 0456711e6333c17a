"""
HiveD's sharing anomalies
=========================

A *sharing anomaly* is a guaranteed job that waits although its tenant's private cluster of quota size could host
it next to the tenant's running jobs. A quota-only scheduler (admission by GPU count) lets other tenants' small jobs
fragment the nodes a tenant with 8-GPU pods needs; HiveD's virtual clusters of cells, bound by a buddy allocator,
remove the anomaly. The same synthetic trace on the ``three-tenant`` preset (64 V100s) under both.
"""

# %%
import matplotlib.pyplot as plt

from schedopt.sim import hived

cluster = hived.cluster_preset("three-tenant")
trace = hived.synthetic_trace(cluster, jobs=200, seed=0, load=0.8)
results = hived.compare(trace)
for name, res in results.items():
    d = res.meta.details["hived"]
    print(f"{name:12s} anomalies {d['anomaly_jobs']:3d}, avg JCT {res.summary()['avg_jct_s'] / 3600:.2f} h")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
names = list(results)
ax.bar(names, [results[n].meta.details["hived"]["anomaly_jobs"] for n in names])
ax.set_ylabel("jobs in anomaly")
ax.set_title("three-tenant, 200 jobs, seed 0")
fig.tight_layout()
