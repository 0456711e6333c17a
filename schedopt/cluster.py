"""The cluster model every package shares: GPU types, their nodes (named, of any size) and GPUs per node.

A :class:`Cluster` is one :class:`GpuType` per type. A type's nodes are anonymous (``<type>-0``, ``<type>-1``, ...)
and all of ``gpus_per_node`` GPUs, as in the simulators' presets, or named (``node_names``) and of their own sizes
(``node_gpus``: GPUs per node, each at most ``gpus_per_node``, the type's nominal node size): a live cluster's node
list, a node with two failed GPUs, a pool of mixed sizes. :meth:`Cluster.from_nodes` builds one from a node list.
``schedopt.sia.Cluster`` and ``schedopt.sia.GpuType`` are these very classes.

Who reads the sizes: the type's GPUs (:attr:`GpuType.total_gpus`, :attr:`Cluster.total_gpus`) are the sum of its
nodes' GPUs; Sia's configurations (:func:`schedopt.sia.generate_configs`) take partial configurations up to the
largest power of two of the nominal size and multi-node configurations over the type's full-size nodes only (a
smaller node hosts partial configurations); Sia's placer (:func:`schedopt.sia.place`), the simulator's placers and
its decision checks respect each node's own GPUs, and so do the policies that write node maps themselves (Pollux,
pollux-unaware, Gavel, Shockwave, Optimus, Gandiva, FIFO, Tiresias: ``formulations/sim_policies.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["MAX_GPUS", "Cluster", "GpuType", "is_int", "need_int"]

#: the largest GPU count anywhere in a Sia spec: GPUs or nodes per type, GPUs in the cluster, a job's GPU counts
#: (a larger value is an InputError, not an int64 overflow or an array of 10**18 entries)
MAX_GPUS = 2**20

_BAD = " @,[]()"


def is_int(v: Any) -> bool:
    """Whether ``v`` is an integer (Python or numpy), booleans excluded."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def need_int(path: str, v: Any, low: int, high: int = MAX_GPUS) -> int:
    """``v`` as an int from ``low`` to ``high``, or :class:`~schedopt.errors.InputError` naming ``path`` and the value."""
    if not is_int(v):
        raise InputError(path, v, "must be an integer")
    if v < low:
        raise InputError(path, v, f"must be >= {low}")
    if v > high:
        raise InputError(path, v, f"must be <= {high} (2**{high.bit_length() - 1})")
    return int(v)


@dataclass(frozen=True, repr=False)
class GpuType:
    """``nodes`` nodes of GPU type ``name`` holding ``gpus_per_node`` GPUs each, or, with ``node_gpus``, that
    many GPUs each (every one in ``1`` to ``gpus_per_node``); ``node_names`` names them (default ``<name>-<k>``).
    Both are kept as ``None`` when they say what the default does (so equal clusters compare equal)."""

    name: str
    gpus_per_node: int
    nodes: int
    node_names: tuple[str, ...] | None = None
    node_gpus: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in _BAD):
            raise InputError("gpu_type.name", self.name, "must be a non-empty string without spaces or @,[]()")
        object.__setattr__(self, "gpus_per_node", need_int(f"gpu_type[{self.name}].gpus_per_node", self.gpus_per_node, 1))
        object.__setattr__(self, "nodes", need_int(f"gpu_type[{self.name}].nodes", self.nodes, 0))
        if self.node_names is not None:
            names = self._seq("node_names", self.node_names)
            for k, n in enumerate(names):
                if not isinstance(n, str) or not n or any(c in n for c in _BAD):
                    raise InputError(f"gpu_type[{self.name}].node_names[{k}]", n,
                                     "must be a non-empty string without spaces or @,[]()")
                if n in names[:k]:
                    raise InputError(f"gpu_type[{self.name}].node_names[{k}]", n, "is a duplicate node name")
            default = all(n == f"{self.name}-{k}" for k, n in enumerate(names))
            object.__setattr__(self, "node_names", None if default else tuple(names))
        if self.node_gpus is not None:
            sizes = self._seq("node_gpus", self.node_gpus)
            sizes = tuple(need_int(f"gpu_type[{self.name}].node_gpus[{k}]", g, 1, self.gpus_per_node)
                          for k, g in enumerate(sizes))
            object.__setattr__(self, "node_gpus", None if all(g == self.gpus_per_node for g in sizes) else sizes)
        if self.total_gpus > MAX_GPUS:
            raise InputError(f"gpu_type[{self.name}].nodes", self.nodes,
                             f"gives {self.total_gpus} GPUs of the type, more than MAX_GPUS = {MAX_GPUS}")

    def _seq(self, field: str, v: Any) -> tuple[Any, ...]:
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise InputError(f"gpu_type[{self.name}].{field}", v, "must be a sequence, one entry per node")
        out = tuple(v)
        if len(out) != self.nodes:
            raise InputError(f"gpu_type[{self.name}].{field}", list(out), f"must have one entry per node ({self.nodes})")
        return out

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in ("node_names", "node_gpus") if getattr(self, k) is not None)
        return f"GpuType(name={self.name!r}, gpus_per_node={self.gpus_per_node!r}, nodes={self.nodes!r}{extra})"

    @property
    def uniform(self) -> bool:
        """Every node holds ``gpus_per_node`` GPUs."""
        return self.node_gpus is None

    @property
    def sizes(self) -> tuple[int, ...]:
        """GPUs of each node, in node order."""
        return self.node_gpus if self.node_gpus is not None else (self.gpus_per_node,) * self.nodes

    @property
    def ids(self) -> tuple[str, ...]:
        """The node ids, in node order."""
        return self.node_names if self.node_names is not None else tuple(f"{self.name}-{k}" for k in range(self.nodes))

    @property
    def full_nodes(self) -> int:
        """Nodes holding ``gpus_per_node`` GPUs (the ones a multi-node configuration takes whole)."""
        return self.nodes if self.node_gpus is None else sum(1 for g in self.node_gpus if g == self.gpus_per_node)

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes if self.node_gpus is None else sum(self.node_gpus)

    @property
    def max_partial(self) -> int:
        """The largest single-node (partial) configuration: the largest power of two <= gpus_per_node."""
        return 1 << (self.gpus_per_node.bit_length() - 1)


@dataclass(frozen=True)
class Cluster:
    """A heterogeneous cluster: one :class:`GpuType` per GPU type (names unique, order kept; node ids unique across
    the cluster)."""

    gpu_types: tuple[GpuType, ...]

    def __post_init__(self) -> None:
        try:
            types = tuple(self.gpu_types)
        except TypeError as exc:
            raise InputError("cluster.gpu_types", self.gpu_types, "must be a sequence of GpuType") from exc
        for i, t in enumerate(types):
            if not isinstance(t, GpuType):
                raise InputError(f"cluster.gpu_types[{i}]", t, "must be a GpuType")
        names = [t.name for t in types]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise InputError(f"cluster.gpu_types[{i}].name", n, "is a duplicate GPU type name")
        if not types:
            raise InputError("cluster.gpu_types", [], "needs at least one GPU type")
        total = sum(t.total_gpus for t in types)
        if total > MAX_GPUS:
            raise InputError("cluster.gpu_types", total, f"hold {total} GPUs, more than MAX_GPUS = {MAX_GPUS}")
        if any(t.node_names is not None for t in types):
            seen: dict[str, str] = {}
            for t in types:
                for n in t.ids:
                    if n in seen:
                        raise InputError(f"gpu_type[{t.name}].node_names", n, f"is a node of type {seen[n]} too")
                    seen[n] = t.name
        object.__setattr__(self, "gpu_types", types)

    @classmethod
    def from_nodes(cls, nodes: Iterable[tuple[str, str, int]], *, gpu_types: Iterable[str] = (),
                   gpus_per_node: dict[str, int] | None = None) -> Cluster:
        """A cluster from a node list ``(name, gpu type, GPUs)``: types in ``gpu_types`` order, then as the nodes
        name them; a type's nominal node size is ``gpus_per_node[type]`` (default: its largest node)."""
        order = list(dict.fromkeys(gpu_types))
        per: dict[str, list[tuple[str, int]]] = {t: [] for t in order}
        for k, item in enumerate(nodes):
            if not isinstance(item, tuple) or len(item) != 3:
                raise InputError(f"nodes[{k}]", item, "must be (name, gpu type, GPUs)")
            name, t, g = item
            if not isinstance(t, str):
                raise InputError(f"nodes[{k}].gpu_type", t, "must be a GPU type name")
            per.setdefault(t, []).append((name, g))
        types = []
        for t, ns in per.items():
            sizes = [need_int(f"node[{n}].gpus", g, 1) for n, g in ns]
            R = (gpus_per_node or {}).get(t, max(sizes, default=1))
            types.append(GpuType(t, R, len(ns), tuple(n for n, _ in ns), tuple(sizes)))
        return cls(tuple(types))

    @cached_property
    def type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.gpu_types)

    @cached_property
    def _type_pos(self) -> dict[str, int]:
        return {n: k for k, n in enumerate(self.type_names)}

    @cached_property
    def _node_pos(self) -> dict[str, tuple[str, int, int]]:
        return {nid: (t.name, k, g) for t in self.gpu_types for k, (nid, g) in enumerate(zip(t.ids, t.sizes))}

    def type_index(self, name: str) -> int:
        try:
            return self._type_pos[name]
        except (KeyError, TypeError):
            raise InputError("gpu_type", name, f"is not in the cluster ({', '.join(self.type_names)})") from None

    def __getitem__(self, name: str) -> GpuType:
        return self.gpu_types[self.type_index(name)]

    @property
    def gpus_per_node(self) -> np.ndarray:
        return np.array([t.gpus_per_node for t in self.gpu_types], dtype=np.int64)

    @property
    def nodes(self) -> np.ndarray:
        return np.array([t.nodes for t in self.gpu_types], dtype=np.int64)

    @property
    def total_gpus(self) -> np.ndarray:
        """GPUs per type (array in type order): the sum of the type's node sizes."""
        if self.uniform:
            return self.gpus_per_node * self.nodes
        return np.array([t.total_gpus for t in self.gpu_types], dtype=np.int64)

    @property
    def num_gpus(self) -> int:
        return int(self.total_gpus.sum())

    @cached_property
    def uniform(self) -> bool:
        """Every node of every type holds its type's ``gpus_per_node`` GPUs."""
        return all(t.uniform for t in self.gpu_types)

    def node_ids(self, name: str) -> list[str]:
        """Node ids of one type: its ``node_names``, else ``<type>-0``, ``<type>-1``, ..."""
        return list(self[name].ids)

    def has_node(self, node_id: str) -> bool:
        return node_id in self._node_pos

    def node_gpus(self, node_id: str) -> int:
        """GPUs of one node."""
        got = self._node_pos.get(node_id) if isinstance(node_id, str) else None
        if got is None:
            raise InputError("node_id", node_id, "names no node of the cluster")
        return got[2]

    def node_type(self, node_id: str) -> str:
        """GPU type of one node."""
        got = self._node_pos.get(node_id) if isinstance(node_id, str) else None
        if got is None:
            raise InputError("node_id", node_id, "names no node of the cluster")
        return got[0]

    def node_index(self, node_id: str) -> int:
        """Position of a node within its type."""
        got = self._node_pos.get(node_id) if isinstance(node_id, str) else None
        if got is None:
            raise InputError("node_id", node_id, "names no node of the cluster")
        return got[1]
