"""The (n, r, t) configuration pruning layer: Sia's configuration set as parallel numpy arrays.

Per GPU type t with N_t nodes of R_t GPUs: single-node configs (1, 2^k, t) for 2^k <= R_t (a node whose R_t is
not a power of two is split into power-of-two virtual nodes, so 2^k <= the largest power of two <= R_t), and
multi-node configs (n, n R_t, t) for n = 2..N_t (whole physical nodes). ``max_gpus_per_job`` drops every config
with more GPUs (Sia's own code uses 64; here it is a parameter, ``None`` = no cap).
"""

from __future__ import annotations

from dataclasses import dataclass
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

    def __len__(self) -> int:
        return int(self.n_gpus.shape[0])

    def __getitem__(self, i: int) -> Config:
        return Config(int(self.n_nodes[i]), int(self.n_gpus[i]), self.type_names[int(self.type_index[i])])

    def __iter__(self):  # type: ignore[no-untyped-def]
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
        """``<n_nodes>x<n_gpus>x<type>`` per config (object array)."""
        return np.array([c.label for c in self.configs], dtype=object)

    @cached_property
    def _pos(self) -> dict[Config, int]:
        return {c: i for i, c in enumerate(self.configs)}

    def index(self, config: Config) -> int:
        """Position of ``config``; :class:`InputError` when it is not a configuration of this table."""
        try:
            return self._pos[config]
        except (KeyError, TypeError):
            raise InputError("config", config, "is not one of the cluster's configurations "
                             "(power-of-two GPUs on one node, or whole nodes)") from None

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
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ConfigTable({len(self)} configs over {', '.join(self.type_names)})"


def generate_configs(cluster: Cluster, max_gpus_per_job: int | None = None) -> ConfigTable:
    """Sia's configuration set for ``cluster`` (N_t + log2 R_t per type), optionally capped at
    ``max_gpus_per_job`` GPUs."""
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a Cluster")
    if max_gpus_per_job is not None and (
        not isinstance(max_gpus_per_job, (int, np.integer)) or isinstance(max_gpus_per_job, bool) or max_gpus_per_job < 1
    ):
        raise InputError("max_gpus_per_job", max_gpus_per_job, "must be a positive integer or None")
    nn, ng, ti = [], [], []
    for k, t in enumerate(cluster.gpu_types):
        if t.nodes == 0:
            continue
        single = 1 << np.arange(t.max_partial.bit_length(), dtype=np.int64)
        multi_n = np.arange(2, t.nodes + 1, dtype=np.int64)
        nn.append(np.concatenate([np.ones_like(single), multi_n]))
        ng.append(np.concatenate([single, multi_n * t.gpus_per_node]))
        ti.append(np.full(single.size + multi_n.size, k, dtype=np.int64))
    n_nodes = np.concatenate(nn) if nn else np.zeros(0, np.int64)
    n_gpus = np.concatenate(ng) if ng else np.zeros(0, np.int64)
    type_index = np.concatenate(ti) if ti else np.zeros(0, np.int64)
    if max_gpus_per_job is not None:
        keep = n_gpus <= int(max_gpus_per_job)
        n_nodes, n_gpus, type_index = n_nodes[keep], n_gpus[keep], type_index[keep]
    for a in (n_nodes, n_gpus, type_index):
        a.setflags(write=False)
    return ConfigTable(n_nodes, n_gpus, type_index, cluster.type_names)
