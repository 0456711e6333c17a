"""The (n, r, t) configuration pruning layer: Sia's configuration set as parallel numpy arrays.

Per GPU type t with N_t nodes of R_t GPUs: single-node configs (1, 2^k, t) for 2^k <= R_t (a node whose R_t is
not a power of two is split into power-of-two virtual nodes, so 2^k <= the largest power of two <= R_t), and
multi-node configs (n, n R_t, t) for n = 2..N_t (whole physical nodes). On a type with nodes smaller than R_t
(:class:`schedopt.cluster.GpuType` ``node_gpus``), N_t counts its full-size nodes only: a smaller node hosts
single-node configurations, placed in aligned blocks of its own GPUs. ``max_gpus_per_job`` drops every config
with more GPUs (Sia's own code uses 64; here it is a parameter, ``None`` = no cap); ``max_nodes`` (the published
code's ``max_physical_nnodes``) drops every config spanning more nodes of its type.

``rigid_counts`` adds the published code's rigid shapes: a rigid job of g GPUs on type t runs on ``ceil(g / R_t)``
nodes, ``g // R_t`` whole nodes plus a remainder of ``g % R_t`` GPUs placed as its power-of-two binary digits
(one aligned block each, inside virtual nodes). Such configurations are marked ``rigid_only`` (adaptive jobs never
get them) and are exempt from both caps, as in the published code (whose rigid variables are per GPU type).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import InputError
from .spec import Cluster, Config

__all__ = ["ConfigTable", "generate_configs"]


@dataclass(frozen=True, eq=False)
class ConfigTable:
    """Configurations as parallel arrays (grouped by GPU type in cluster order; within a type by GPU count).

    ``table[i]`` is a :class:`Config`; ``table.configs`` the list; ``table.index(config)`` the position.
    """

    n_nodes: np.ndarray
    n_gpus: np.ndarray
    type_index: np.ndarray
    type_names: tuple[str, ...]
    #: configurations only rigid jobs may take (the published code's rigid shapes); left out (or None): none
    rigid_only: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: GPUs per node of each configuration's type (set by :func:`generate_configs`; needed for whole / part)
    gpus_per_node: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.rigid_only is None or (self.rigid_only.size == 0 and self.n_gpus.shape[0]):
            ro = np.zeros(self.n_gpus.shape[0], dtype=bool)
            ro.setflags(write=False)
            object.__setattr__(self, "rigid_only", ro)

    @cached_property
    def whole(self) -> np.ndarray:
        """Nodes each configuration takes whole (0 for a partial configuration)."""
        return self._parts[0]

    @cached_property
    def part(self) -> np.ndarray:
        """GPUs each configuration takes outside whole nodes, as power-of-two blocks (its binary digits)."""
        return self._parts[1]

    @cached_property
    def _parts(self) -> tuple[np.ndarray, np.ndarray]:
        if self.gpus_per_node is None:
            raise InputError("configs", self, "was built without gpus_per_node; use generate_configs")
        R = self.gpus_per_node[self.type_index]
        maxp = np.left_shift(1, np.floor(np.log2(R)).astype(np.int64))
        g, n = self.n_gpus, self.n_nodes
        partial = (n == 1) & (g <= maxp) & ((g & (g - 1)) == 0)
        whole = np.where(partial, 0, g // R)
        part = np.where(partial, g, g % R)
        return whole, part

    def __len__(self) -> int:
        return int(self.n_gpus.shape[0])

    def __getitem__(self, i: int) -> Config:
        return Config(int(self.n_nodes[i]), int(self.n_gpus[i]), self.type_names[int(self.type_index[i])])

    def __iter__(self) -> Iterator[Config]:
        return iter(self.configs)

    @cached_property
    def configs(self) -> list[Config]:
        # the table's entries are valid by construction: build the frozen Configs without re-running their checks
        names = self.type_names
        out = []
        for n, g, t in zip(self.n_nodes.tolist(), self.n_gpus.tolist(), self.type_index.tolist()):
            c = object.__new__(Config)
            object.__setattr__(c, "n_nodes", n)
            object.__setattr__(c, "n_gpus", g)
            object.__setattr__(c, "gpu_type", names[t])
            out.append(c)
        return out

    @cached_property
    def labels(self) -> np.ndarray:
        """``<n_nodes>x<n_gpus>x<type>`` per config (a read-only object array: tables are shared)."""
        out = np.array([c.label for c in self.configs], dtype=object)
        out.setflags(write=False)
        return out

    @cached_property
    def _pos(self) -> dict[Config, int]:
        return {c: i for i, c in enumerate(self.configs)}

    def index(self, config: Config) -> int:
        """Position of ``config``; :class:`InputError` when it is not a configuration of this table."""
        try:
            return self._pos[config]
        except (KeyError, TypeError):
            raise InputError("config", config, "is not one of the cluster's configurations "
                             "(power-of-two GPUs on one node, or whole nodes; or a rigid job's shape)") from None

    def find(self, config: Config) -> int:
        """Position of ``config`` or -1."""
        return self._pos.get(config, -1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigTable):
            return NotImplemented
        return (
            self.type_names == other.type_names
            and np.array_equal(self.n_nodes, other.n_nodes)
            and np.array_equal(self.n_gpus, other.n_gpus)
            and np.array_equal(self.type_index, other.type_index)
            and np.array_equal(self.rigid_only, other.rigid_only)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ConfigTable({len(self)} configs over {', '.join(self.type_names)})"


def _check_cap(name: str, v: object) -> int | None:
    if v is None:
        return None
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
        raise InputError(name, v, "must be a positive integer or None")
    return int(v)


#: tables already built: (cluster, cap, node caps, rigid counts) -> table. A table is immutable (read-only arrays,
#: frozen fields), so equal inputs share one, with its cached Configs, labels and index (a simulator asks for the
#: same table twice a round). Bounded: when full, the oldest entry goes (clearing the whole dict made a table built
#: just before another one miss in a process that had built 63 tables: an order-dependent test failure).
_TABLES: dict[tuple[object, ...], ConfigTable] = {}
_TABLES_MAX = 64
#: (id(cluster), type and value of the cap) -> (cluster, table) for calls without node caps or rigid counts; the
#: entry holds the cluster, so its id names it while the entry lives
_BY_ID: dict[tuple[object, ...], tuple[Cluster, ConfigTable]] = {}


def generate_configs(
    cluster: Cluster,
    max_gpus_per_job: int | None = None,
    *,
    max_nodes: Mapping[str, int] | int | None = None,
    rigid_counts: Iterable[int] = (),
) -> ConfigTable:
    """Sia's configuration set for ``cluster`` (N_t + log2 R_t per type), optionally capped at
    ``max_gpus_per_job`` GPUs and ``max_nodes`` nodes per type (an int, or a mapping type name -> cap), plus the
    rigid shapes of ``rigid_counts`` (see the module doc), appended after the standard configurations.

    Equal inputs give the same (immutable) table object, built once per process (the last 64 built are kept)."""
    if (max_nodes is None and type(rigid_counts) in (tuple, list) and not rigid_counts
            and (max_gpus_per_job is None or type(max_gpus_per_job) is int)):
        # the common call (a simulator asks twice a round): the table of this very cluster object and cap, found by
        # identity before the checks and the cluster's hash (only a table those gave is kept here); only for a cap
        # of None or an int: anything else (a list, NaN) goes to the checks, which name it
        hit = _BY_ID.get((id(cluster), type(max_gpus_per_job), max_gpus_per_job))
        if hit is not None and hit[0] is cluster:
            return hit[1]
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a Cluster")
    cap = _check_cap("max_gpus_per_job", max_gpus_per_job)
    if isinstance(max_nodes, Mapping):
        node_cap = {k: _check_cap(f"max_nodes[{k}]", v) for k, v in max_nodes.items()}
    else:
        one = _check_cap("max_nodes", max_nodes)
        node_cap = {t.name: one for t in cluster.gpu_types}
    counts = sorted({int(g) for g in rigid_counts})
    key = (cluster, cap, tuple(node_cap.items()), tuple(counts))
    table = _TABLES.get(key)
    if table is None:
        table = _build_table(cluster, cap, node_cap, counts)
        if len(_TABLES) >= _TABLES_MAX:
            del _TABLES[next(iter(_TABLES))]
        _TABLES[key] = table
    if max_nodes is None and not counts and type(max_gpus_per_job) in (int, type(None)):
        if len(_BY_ID) >= _TABLES_MAX:
            del _BY_ID[next(iter(_BY_ID))]
        _BY_ID[(id(cluster), type(max_gpus_per_job), max_gpus_per_job)] = (cluster, table)  # (keeps the cluster alive)
    return table


def _build_table(cluster: Cluster, cap: int | None, node_cap: Mapping[str, int | None], counts: list[int]) -> ConfigTable:
    """The table of :func:`generate_configs` from its checked inputs (``counts``: the distinct rigid counts, sorted)."""
    nn, ng, ti = [], [], []
    for k, t in enumerate(cluster.gpu_types):
        if t.nodes == 0:
            continue
        single = 1 << np.arange(t.max_partial.bit_length(), dtype=np.int64)
        node_limit = node_cap.get(t.name)
        top = t.full_nodes if node_limit is None else min(t.full_nodes, int(node_limit))  # whole full-size nodes
        multi_n = np.arange(2, top + 1, dtype=np.int64)
        nn.append(np.concatenate([np.ones_like(single), multi_n]))
        ng.append(np.concatenate([single, multi_n * t.gpus_per_node]))
        ti.append(np.full(single.size + multi_n.size, k, dtype=np.int64))
    n_nodes = np.concatenate(nn) if nn else np.zeros(0, np.int64)
    n_gpus = np.concatenate(ng) if ng else np.zeros(0, np.int64)
    type_index = np.concatenate(ti) if ti else np.zeros(0, np.int64)
    if cap is not None:
        keep = n_gpus <= cap
        n_nodes, n_gpus, type_index = n_nodes[keep], n_gpus[keep], type_index[keep]
    rigid_only = np.zeros(n_gpus.size, dtype=bool)
    if counts:
        have = set(zip(type_index.tolist(), n_gpus.tolist()))
        xn, xg, xt = [], [], []
        for k, t in enumerate(cluster.gpu_types):
            for g in counts:
                if g < 1 or g > t.total_gpus or (k, g) in have:
                    continue
                xn.append(-(-g // t.gpus_per_node))  # ceil(g / R): whole nodes plus the remainder's node
                xg.append(g)
                xt.append(k)
        if xg:
            n_nodes = np.concatenate([n_nodes, np.array(xn, np.int64)])
            n_gpus = np.concatenate([n_gpus, np.array(xg, np.int64)])
            type_index = np.concatenate([type_index, np.array(xt, np.int64)])
            rigid_only = np.concatenate([rigid_only, np.ones(len(xg), dtype=bool)])
    for a in (n_nodes, n_gpus, type_index, rigid_only):
        a.setflags(write=False)
    gpn = cluster.gpus_per_node
    gpn.setflags(write=False)
    return ConfigTable(n_nodes, n_gpus, type_index, cluster.type_names, rigid_only, gpn)


def shape_error(cluster: Cluster, c: Config, *, rigid_shape: bool = False) -> str | None:
    """Why ``c`` is no configuration shape of ``cluster`` (None when it is), caps aside: a power of two on one
    node, whole nodes (2..N_t), or with ``rigid_shape`` a rigid job's ``ceil(g / R)`` nodes for any g <= the
    type's GPUs."""
    if c.gpu_type not in cluster.type_names:
        return f"{c.label}: unknown GPU type {c.gpu_type!r}"
    t = cluster[c.gpu_type]
    R = t.gpus_per_node
    if rigid_shape:
        if c.n_gpus > t.total_gpus:
            return f"{c.label}: more GPUs than the type has ({t.total_gpus})"
        partial = c.n_nodes == 1 and c.n_gpus <= t.max_partial and (c.n_gpus & (c.n_gpus - 1)) == 0
        if not partial and c.n_nodes != -(-c.n_gpus // R):
            return f"{c.label}: a rigid shape of {c.n_gpus} GPUs spans ceil({c.n_gpus}/{R}) = {-(-c.n_gpus // R)} nodes"
        return None
    if c.n_nodes == 1:
        if not ((c.n_gpus & (c.n_gpus - 1)) == 0 and c.n_gpus <= t.max_partial):
            return f"{c.label}: a single-node configuration needs a power of two <= {t.max_partial} GPUs"
        return None
    if not 2 <= c.n_nodes <= t.full_nodes:
        return f"{c.label}: needs 2..{t.full_nodes} nodes" + (
            f" of {R} GPUs (the type's full-size nodes)" if not t.uniform else "")
    if c.n_gpus != c.n_nodes * R:
        return f"{c.label}: a multi-node configuration uses whole nodes ({R} GPUs each)"
    return None
