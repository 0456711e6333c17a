"""The typed state of a live cluster: nodes, jobs, what was measured of them, and the events that change them.

Everything here is a frozen, validated dataclass (bad input raises :class:`~schedopt.errors.InputError` naming the
field and the value) with a JSON form (``to_dict`` / ``from_dict``), so the same documents travel through
:meth:`schedopt.live.Session.to_document` and the decision service.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, TypeAlias

from ..errors import InputError
from ..goodput import JobGoodputModel
from ..sia import Cluster

__all__ = [
    "HEALTH",
    "JOB_KINDS",
    "ClusterState",
    "Event",
    "JobCancelled",
    "JobFailed",
    "JobFinished",
    "JobProgress",
    "JobSubmitted",
    "LiveJob",
    "Measurement",
    "NodeDown",
    "NodeDrained",
    "NodeHealth",
    "NodeState",
    "NodeUp",
    "NodeUpdated",
    "event_from_dict",
    "event_to_dict",
]

#: A node's health: ``up`` (allocatable), ``down`` (lost: its jobs are requeued), ``drained`` (running jobs stay, nothing new starts).
NodeHealth = Literal["up", "down", "drained"]
#: a node's health: ``up`` (schedulable), ``down`` (gone: its jobs lose their GPUs), ``drained`` (cordoned: no new
#: job is placed there; jobs already there keep their GPUs while the policy keeps them there)
HEALTH = ("up", "down", "drained")
#: a live job's kind (the Sia ILP's job kinds)
JOB_KINDS = ("adaptive", "strong", "rigid")

_BAD_NAME = " @,[]()"


def _name(path: str, v: Any) -> str:
    if not isinstance(v, str) or not v or any(c in v for c in _BAD_NAME) or len(v) > 253:
        raise InputError(path, v, f"must be a non-empty text of at most 253 characters without any of {_BAD_NAME!r}")
    return v


def _int(path: str, v: Any, low: int, high: int = 2**20) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(path, v, "must be an integer")
    if not low <= v <= high:
        raise InputError(path, v, f"must be in [{low}, {high}]")
    return int(v)


def _num(path: str, v: Any, low: float = 0.0, high: float = math.inf, *, open_low: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(path, v, "must be a number")
    f = float(v)
    if not math.isfinite(f) or f < low or (open_low and f == low) or f > high:
        raise InputError(path, v, f"must be a finite number {'>' if open_low else '>='} {low}"
                         + (f" and <= {high}" if high < math.inf else ""))
    return f


def _gpu_list(path: str, v: Any, size: int | None = None) -> tuple[int, ...]:
    if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
        raise InputError(path, v, "must be a list of GPU indices")
    out = tuple(_int(f"{path}[{k}]", g, 0, (size - 1) if size is not None else 2**20) for k, g in enumerate(v))
    if len(set(out)) != len(out):
        raise InputError(path, list(v), "names a GPU twice")
    return tuple(sorted(out))


def _fields(path: str, d: Any, known: Sequence[str], required: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(d, Mapping):
        raise InputError(path, type(d).__name__, "must be an object")
    for k in d:
        if k not in known:
            raise InputError(f"{path}.{k}", d[k], f"is not a field (known: {', '.join(known)})")
    for k in required:
        if k not in d:
            raise InputError(f"{path}.{k}", None, "is required")
    return d


# ---------------------------------------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class NodeState:
    """One node as the resource manager sees it: ``gpus`` GPUs (indices ``0`` to ``gpus - 1``) of ``gpu_type``;
    ``failed_gpus`` are never allocated; ``cpus`` and ``memory_gb`` where known (informative)."""

    name: str
    gpu_type: str
    gpus: int
    health: str = "up"
    failed_gpus: tuple[int, ...] = ()
    cpus: int | None = None
    memory_gb: float | None = None

    def __post_init__(self) -> None:
        _name("node.name", self.name)
        p = f"node[{self.name}]"
        _name(f"{p}.gpu_type", self.gpu_type)
        object.__setattr__(self, "gpus", _int(f"{p}.gpus", self.gpus, 1, 1024))
        if self.health not in HEALTH:
            raise InputError(f"{p}.health", self.health, f"must be one of {list(HEALTH)}")
        object.__setattr__(self, "failed_gpus", _gpu_list(f"{p}.failed_gpus", self.failed_gpus, self.gpus))
        if self.cpus is not None:
            object.__setattr__(self, "cpus", _int(f"{p}.cpus", self.cpus, 0, 2**24))
        if self.memory_gb is not None:
            object.__setattr__(self, "memory_gb", _num(f"{p}.memory_gb", self.memory_gb))

    @property
    def healthy_gpus(self) -> tuple[int, ...]:
        """GPU indices not failed."""
        bad = set(self.failed_gpus)
        return tuple(g for g in range(self.gpus) if g not in bad)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "gpu_type": self.gpu_type, "gpus": self.gpus, "health": self.health}
        if self.failed_gpus:
            d["failed_gpus"] = list(self.failed_gpus)
        if self.cpus is not None:
            d["cpus"] = self.cpus
        if self.memory_gb is not None:
            d["memory_gb"] = self.memory_gb
        return d

    @classmethod
    def from_dict(cls, d: Any, path: str = "node") -> NodeState:
        f = _fields(path, d, ("name", "gpu_type", "gpus", "health", "failed_gpus", "cpus", "memory_gb"),
                    ("name", "gpu_type", "gpus"))
        try:
            return cls(f["name"], f["gpu_type"], f["gpus"], f.get("health", "up"), tuple(f.get("failed_gpus", ())),
                       f.get("cpus"), f.get("memory_gb"))
        except InputError as e:
            raise _reroot(e, "node", path) from None
        except TypeError as e:
            raise InputError(f"{path}.failed_gpus", f.get("failed_gpus"), "must be a list of GPU indices") from e


def _reroot(e: InputError, old: str, new: str) -> InputError:
    f = e.field
    if f.startswith(old) and old != new:
        f = new + f[len(old):]
        if f.startswith(new + "[") and "]." in f:  # node[n1].gpus -> nodes[3].gpus (the path names the position)
            f = new + f[f.index("]") + 1:]
    return InputError(f, e.value, e.message)


@dataclass(frozen=True)
class ClusterState:
    """The cluster as it is now: its nodes (names unique) and the order of its GPU types (default: the order in
    which the nodes name them). :meth:`from_cluster` gives the simulator's cluster (nodes ``<type>-<k>``)."""

    nodes: tuple[NodeState, ...]
    gpu_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.nodes, (str, bytes, Mapping)) or not isinstance(self.nodes, Sequence):
            raise InputError("cluster.nodes", type(self.nodes).__name__, "must be a list of NodeState")
        nodes = tuple(self.nodes)
        if not nodes:
            raise InputError("cluster.nodes", [], "needs at least one node")
        seen: dict[str, int] = {}
        for k, n in enumerate(nodes):
            if not isinstance(n, NodeState):
                raise InputError(f"cluster.nodes[{k}]", type(n).__name__, "must be a NodeState")
            if n.name in seen:
                raise InputError(f"cluster.nodes[{k}].name", n.name, f"is the name of nodes[{seen[n.name]}] too")
            seen[n.name] = k
        order = list(dict.fromkeys(self.gpu_types or ()))
        for i, t in enumerate(order):
            _name(f"cluster.gpu_types[{i}]", t)
        for n in nodes:
            if n.gpu_type not in order:
                if self.gpu_types:
                    raise InputError(f"node[{n.name}].gpu_type", n.gpu_type, f"is not in cluster.gpu_types {order}")
                order.append(n.gpu_type)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "gpu_types", tuple(order))

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> ClusterState:
        """The simulator's cluster: every node ``<type>-<k>`` up with ``gpus_per_node`` GPUs."""
        if not isinstance(cluster, Cluster):
            raise InputError("cluster", type(cluster).__name__, "must be a schedopt.sia.Cluster")
        return cls(tuple(NodeState(nid, t.name, t.gpus_per_node) for t in cluster.gpu_types
                         for nid in cluster.node_ids(t.name)), cluster.type_names)

    @cached_property
    def _by_name(self) -> dict[str, NodeState]:
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> NodeState:
        got = self._by_name.get(name) if isinstance(name, str) else None
        if got is None:
            raise InputError("node", name, "names no node of the cluster")
        return got

    def replace(self, node: NodeState) -> ClusterState:
        """This state with ``node`` added or replacing the node of its name."""
        if not isinstance(node, NodeState):
            raise InputError("node", type(node).__name__, "must be a NodeState")
        nodes = [node if n.name == node.name else n for n in self.nodes]
        if all(n.name != node.name for n in self.nodes):
            nodes.append(node)
        types = self.gpu_types if node.gpu_type in self.gpu_types else (*self.gpu_types, node.gpu_type)
        return ClusterState(tuple(nodes), types)

    @property
    def num_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu_types": list(self.gpu_types), "nodes": [n.to_dict() for n in self.nodes]}

    @classmethod
    def from_dict(cls, d: Any, path: str = "cluster") -> ClusterState:
        f = _fields(path, d, ("gpu_types", "nodes"), ("nodes",))
        nodes = f["nodes"]
        if not isinstance(nodes, list):
            raise InputError(f"{path}.nodes", type(nodes).__name__, "must be a list of nodes")
        types = f.get("gpu_types", [])
        if not isinstance(types, list):
            raise InputError(f"{path}.gpu_types", types, "must be a list of GPU type names")
        return cls(tuple(NodeState.from_dict(n, f"{path}.nodes[{k}]") for k, n in enumerate(nodes)), tuple(types))


# ----------------------------------------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class Measurement:
    """One measured configuration of a job: its step time and the part of it spent synchronising gradients, at
    ``local_batch`` per GPU on ``gpus`` GPUs over ``nodes`` nodes of ``gpu_type`` (AdaptDL's and Sia's profile
    entries: one per (type, nodes, GPUs, local batch))."""

    gpu_type: str
    nodes: int
    gpus: int
    local_batch: int
    step_time: float
    sync_time: float = 0.0

    def __post_init__(self) -> None:
        p = "measurement"
        _name(f"{p}.gpu_type", self.gpu_type)
        object.__setattr__(self, "nodes", _int(f"{p}.nodes", self.nodes, 1))
        object.__setattr__(self, "gpus", _int(f"{p}.gpus", self.gpus, self.nodes))
        object.__setattr__(self, "local_batch", _int(f"{p}.local_batch", self.local_batch, 1, 2**31))
        object.__setattr__(self, "step_time", _num(f"{p}.step_time", self.step_time, open_low=True))
        object.__setattr__(self, "sync_time", _num(f"{p}.sync_time", self.sync_time))
        if not self.sync_time < self.step_time:
            raise InputError(f"{p}.sync_time", self.sync_time, f"must be < step_time ({self.step_time})")

    @property
    def key(self) -> tuple[str, int, int, int]:
        return (self.gpu_type, self.nodes, self.gpus, self.local_batch)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu_type": self.gpu_type, "nodes": self.nodes, "gpus": self.gpus, "local_batch": self.local_batch,
                "step_time": self.step_time, "sync_time": self.sync_time}

    @classmethod
    def from_dict(cls, d: Any, path: str = "measurement") -> Measurement:
        f = _fields(path, d, ("gpu_type", "nodes", "gpus", "local_batch", "step_time", "sync_time"),
                    ("gpu_type", "nodes", "gpus", "local_batch", "step_time"))
        try:
            return cls(f["gpu_type"], f["nodes"], f["gpus"], f["local_batch"], f["step_time"], f.get("sync_time", 0.0))
        except InputError as e:
            raise _reroot(e, "measurement", path) from None


def _measurements(path: str, ms: Any) -> tuple[Measurement, ...]:
    if isinstance(ms, (str, bytes, Mapping)) or not isinstance(ms, Sequence):
        raise InputError(path, ms, "must be a list of Measurement")
    for k, m in enumerate(ms):
        if not isinstance(m, Measurement):
            raise InputError(f"{path}[{k}]", type(m).__name__, "must be a Measurement")
    return tuple(ms)


def _placement(path: str, v: Any) -> dict[str, tuple[int, ...]]:
    if not isinstance(v, Mapping):
        raise InputError(path, v, "must map node names to lists of GPU indices")
    out = {}
    for n, gs in v.items():
        _name(f"{path} key", n)
        got = _gpu_list(f"{path}[{n}]", gs)
        if got:
            out[n] = got
    return out


@dataclass(frozen=True)
class LiveJob:
    """A job as the resource manager knows it.

    ``application``: a name the session's job model knows (the simulator's applications, ``schedopt.zoo``), or the
    name of ``profile``, the job's own goodput profile (:class:`~schedopt.goodput.JobGoodputModel`: its 1-GPU
    profiles, batch limits and gradient statistics). ``kind``: ``adaptive`` (GPUs and batch chosen by the policy),
    ``strong`` (GPUs chosen, the batch fixed at ``batch_size``), ``rigid`` (``requested_gpus`` and ``batch_size``
    fixed); None: as the simulator decides (adaptive under an adaptive policy, else rigid). ``placement``: where it
    runs now (node name -> GPU indices; empty: queued), for a job already running when the session learns of it.
    ``measurements``, ``progress`` (fraction of its work done, in [0, 1)), ``epoch``, ``restarts`` and
    ``attained_gpu_seconds``: what is known of it so far."""

    id: str
    application: str
    submitted: float
    requested_gpus: int = 1
    batch_size: int | None = None
    kind: str | None = None
    profile: JobGoodputModel | None = None
    placement: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    measurements: tuple[Measurement, ...] = ()
    progress: float = 0.0
    epoch: int = 0
    restarts: int = 0
    attained_gpu_seconds: float = 0.0

    def __post_init__(self) -> None:
        _name("job.id", self.id)
        p = f"job[{self.id}]"
        _name(f"{p}.application", self.application)
        object.__setattr__(self, "submitted", _num(f"{p}.submitted", self.submitted))
        object.__setattr__(self, "requested_gpus", _int(f"{p}.requested_gpus", self.requested_gpus, 1))
        if self.batch_size is not None:
            object.__setattr__(self, "batch_size", _int(f"{p}.batch_size", self.batch_size, 1, 2**31))
        if self.kind is not None and self.kind not in JOB_KINDS:
            raise InputError(f"{p}.kind", self.kind, f"must be one of {list(JOB_KINDS)} or None")
        if self.profile is not None:
            if not isinstance(self.profile, JobGoodputModel):
                raise InputError(f"{p}.profile", type(self.profile).__name__, "must be a JobGoodputModel")
            if self.profile.name != self.application:
                raise InputError(f"{p}.application", self.application,
                                 f"must be the profile's name ({self.profile.name!r})")
        object.__setattr__(self, "placement", _placement(f"{p}.placement", self.placement))
        object.__setattr__(self, "measurements", _measurements(f"{p}.measurements", self.measurements))
        object.__setattr__(self, "progress", _num(f"{p}.progress", self.progress, 0.0, 1.0))
        if self.progress >= 1.0:
            raise InputError(f"{p}.progress", self.progress, "must be < 1 (a finished job is reported finished)")
        object.__setattr__(self, "epoch", _int(f"{p}.epoch", self.epoch, 0, 2**20))
        object.__setattr__(self, "restarts", _int(f"{p}.restarts", self.restarts, 0, 2**20))
        object.__setattr__(self, "attained_gpu_seconds", _num(f"{p}.attained_gpu_seconds", self.attained_gpu_seconds))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "application": self.application, "submitted": self.submitted,
                             "requested_gpus": self.requested_gpus}
        if self.batch_size is not None:
            d["batch_size"] = self.batch_size
        if self.kind is not None:
            d["kind"] = self.kind
        if self.profile is not None:
            d["profile"] = self.profile.to_dict()
        if self.placement:
            d["placement"] = {n: list(g) for n, g in self.placement.items()}
        if self.measurements:
            d["measurements"] = [m.to_dict() for m in self.measurements]
        for k in ("progress", "epoch", "restarts", "attained_gpu_seconds"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        return d

    @classmethod
    def from_dict(cls, d: Any, path: str = "job") -> LiveJob:
        names = ("id", "application", "submitted", "requested_gpus", "batch_size", "kind", "profile", "placement",
                 "measurements", "progress", "epoch", "restarts", "attained_gpu_seconds")
        f = _fields(path, d, names, ("id", "application", "submitted"))
        kw = {k: f[k] for k in names if k in f and k not in ("profile", "measurements")}
        if "profile" in f:
            try:
                kw["profile"] = JobGoodputModel.from_dict(f["profile"])
            except InputError as e:
                raise InputError(f"{path}.profile.{e.field}", e.value, e.message) from None
            except (TypeError, KeyError, ValueError, AttributeError) as e:
                raise InputError(f"{path}.profile", "…", f"is not a goodput profile document ({e})") from None
        if "measurements" in f:
            ms = f["measurements"]
            if not isinstance(ms, list):
                raise InputError(f"{path}.measurements", type(ms).__name__, "must be a list")
            kw["measurements"] = tuple(Measurement.from_dict(m, f"{path}.measurements[{k}]") for k, m in enumerate(ms))
        try:
            return cls(**kw)
        except InputError as e:
            raise _reroot(e, "job", path) from None


# --------------------------------------------------------------------------------------------------------- events


@dataclass(frozen=True)
class _Event:
    time: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "time", _num(f"{type(self).__name__}.time", self.time))


@dataclass(frozen=True)
class JobSubmitted(_Event):
    """A job arrived (or, with a ``placement``, a running job the session did not know of yet)."""

    job: LiveJob

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.job, LiveJob):
            raise InputError("JobSubmitted.job", type(self.job).__name__, "must be a LiveJob")


@dataclass(frozen=True)
class _JobEvent(_Event):
    job_id: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _name(f"{type(self).__name__}.job_id", self.job_id)


@dataclass(frozen=True)
class JobFinished(_JobEvent):
    """The job completed: its GPUs are free."""


@dataclass(frozen=True)
class JobFailed(_JobEvent):
    """The job failed for good (it is not retried): its GPUs are free."""

    reason: str = ""


@dataclass(frozen=True)
class JobCancelled(_JobEvent):
    """The user cancelled the job: its GPUs are free."""


@dataclass(frozen=True)
class JobProgress(_JobEvent):
    """What the job reports while it runs: ``progress`` (fraction of its work, in [0, 1)), ``epoch``, new
    ``measurements``, the batch it trains at now (``local_batch`` per GPU and ``accumulation`` steps: an adaptive
    job re-chooses them at epoch boundaries), and ``attained_gpu_seconds`` where the resource manager counts it
    (otherwise the session counts GPUs held x time between decisions), and the gradient statistics it measured
    (``grad_sqr``, ``grad_var``: Pollux's squared gradient norm and gradient variance, at the profile's initial
    batch), which then replace its profile's in its estimate and its batch. Fields left None are unchanged."""

    progress: float | None = None
    epoch: int | None = None
    measurements: tuple[Measurement, ...] = ()
    local_batch: int | None = None
    accumulation: int | None = None
    attained_gpu_seconds: float | None = None
    grad_sqr: float | None = None
    grad_var: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        p = f"JobProgress[{self.job_id}]"
        if self.progress is not None:
            v = _num(f"{p}.progress", self.progress, 0.0, 1.0)
            if v >= 1.0:
                raise InputError(f"{p}.progress", v, "must be < 1 (send JobFinished when the job is done)")
            object.__setattr__(self, "progress", v)
        if self.epoch is not None:
            object.__setattr__(self, "epoch", _int(f"{p}.epoch", self.epoch, 0))
        object.__setattr__(self, "measurements", _measurements(f"{p}.measurements", self.measurements))
        if self.local_batch is not None:
            object.__setattr__(self, "local_batch", _int(f"{p}.local_batch", self.local_batch, 1, 2**31))
        if self.accumulation is not None:
            object.__setattr__(self, "accumulation", _int(f"{p}.accumulation", self.accumulation, 0, 2**20))
        if (self.local_batch is None) != (self.accumulation is None):
            raise InputError(f"{p}.accumulation", self.accumulation, "comes with local_batch (both or neither)")
        if self.attained_gpu_seconds is not None:
            object.__setattr__(self, "attained_gpu_seconds",
                               _num(f"{p}.attained_gpu_seconds", self.attained_gpu_seconds))
        if (self.grad_sqr is None) != (self.grad_var is None):
            raise InputError(f"{p}.grad_var", self.grad_var, "comes with grad_sqr (both or neither)")
        if self.grad_sqr is not None and self.grad_var is not None:
            object.__setattr__(self, "grad_sqr", _num(f"{p}.grad_sqr", self.grad_sqr))
            object.__setattr__(self, "grad_var", _num(f"{p}.grad_var", self.grad_var))


@dataclass(frozen=True)
class _NodeEvent(_Event):
    node: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _name(f"{type(self).__name__}.node", self.node)


@dataclass(frozen=True)
class NodeDown(_NodeEvent):
    """The node is gone: the jobs on it lose their GPUs (queued again; their next start counts a restart)."""


@dataclass(frozen=True)
class NodeUp(_NodeEvent):
    """The node is schedulable again."""


@dataclass(frozen=True)
class NodeDrained(_NodeEvent):
    """The node is cordoned: no job is placed there anew; jobs there keep their GPUs while the policy keeps them."""


@dataclass(frozen=True)
class NodeUpdated(_Event):
    """A node added, or replaced by its new state (e.g. GPUs that failed: ``failed_gpus``)."""

    state: NodeState

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.state, NodeState):
            raise InputError("NodeUpdated.state", type(self.state).__name__, "must be a NodeState")


#: Any event :meth:`Session.apply` takes (a job or a node event).
Event: TypeAlias = (JobSubmitted | JobFinished | JobFailed | JobCancelled | JobProgress | NodeDown | NodeUp
                    | NodeDrained | NodeUpdated)
_EVENTS: dict[str, type[_Event]] = {c.__name__: c for c in (JobSubmitted, JobFinished, JobFailed, JobCancelled,
                                                               JobProgress, NodeDown, NodeUp, NodeDrained,
                                                               NodeUpdated)}


_NODE_EVENTS: dict[str, Callable[[float, str], Event]] = {"NodeDown": NodeDown, "NodeUp": NodeUp,
                                                           "NodeDrained": NodeDrained}
_PLAIN_JOB_EVENTS: dict[str, Callable[[float, str], Event]] = {"JobFinished": JobFinished,
                                                               "JobCancelled": JobCancelled}


def event_to_dict(e: Event) -> dict[str, Any]:
    """An event's JSON form: ``{"type": "JobFinished", "time": ..., ...}``."""
    d: dict[str, Any] = {"type": type(e).__name__, "time": e.time}
    if isinstance(e, JobSubmitted):
        d["job"] = e.job.to_dict()
    elif isinstance(e, NodeUpdated):
        d["state"] = e.state.to_dict()
    elif isinstance(e, _NodeEvent):
        d["node"] = e.node
    else:
        d["job_id"] = e.job_id
        if isinstance(e, JobFailed) and e.reason:
            d["reason"] = e.reason
        if isinstance(e, JobProgress):
            for k in ("progress", "epoch", "local_batch", "accumulation", "attained_gpu_seconds", "grad_sqr",
                      "grad_var"):
                if getattr(e, k) is not None:
                    d[k] = getattr(e, k)
            if e.measurements:
                d["measurements"] = [m.to_dict() for m in e.measurements]
    return d


def event_from_dict(d: Any, path: str = "event") -> Event:
    """The event of a JSON document (:func:`event_to_dict`); bad input names the field."""
    if not isinstance(d, Mapping):
        raise InputError(path, type(d).__name__, "must be an object")
    kind = d.get("type")
    cls = _EVENTS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise InputError(f"{path}.type", kind, f"must be one of {sorted(_EVENTS)}")
    base = ["type", "time"]
    if cls is JobSubmitted:
        f = _fields(path, d, [*base, "job"], [*base, "job"])
        return JobSubmitted(f["time"], LiveJob.from_dict(f["job"], f"{path}.job"))
    if cls is NodeUpdated:
        f = _fields(path, d, [*base, "state"], [*base, "state"])
        return NodeUpdated(f["time"], NodeState.from_dict(f["state"], f"{path}.state"))
    try:
        node_event = _NODE_EVENTS.get(cls.__name__)
        if node_event is not None:
            f = _fields(path, d, [*base, "node"], [*base, "node"])
            return node_event(f["time"], f["node"])
        if cls is JobProgress:
            opt = ["progress", "epoch", "local_batch", "accumulation", "attained_gpu_seconds", "measurements",
                   "grad_sqr", "grad_var"]
            f = _fields(path, d, [*base, "job_id", *opt], [*base, "job_id"])
            ms = f.get("measurements", [])
            if not isinstance(ms, list):
                raise InputError(f"{path}.measurements", type(ms).__name__, "must be a list")
            return JobProgress(f["time"], f["job_id"], f.get("progress"), f.get("epoch"),
                               tuple(Measurement.from_dict(m, f"{path}.measurements[{k}]") for k, m in enumerate(ms)),
                               f.get("local_batch"), f.get("accumulation"), f.get("attained_gpu_seconds"),
                               f.get("grad_sqr"), f.get("grad_var"))
        if cls is JobFailed:
            f = _fields(path, d, [*base, "job_id", "reason"], [*base, "job_id"])
            reason = f.get("reason", "")
            if not isinstance(reason, str) or len(reason) > 4096:
                raise InputError(f"{path}.reason", reason, "must be a text of at most 4096 characters")
            return JobFailed(f["time"], f["job_id"], reason)
        f = _fields(path, d, [*base, "job_id"], [*base, "job_id"])
        return _PLAIN_JOB_EVENTS[cls.__name__](f["time"], f["job_id"])
    except InputError as e:
        fld = e.field
        if "." in fld and not fld.startswith(path):
            fld = f"{path}.{fld.split('.', 1)[1].split(']', 1)[-1].lstrip('.')}"
        raise InputError(fld, e.value, e.message) from None
