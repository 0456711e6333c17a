"""Cells, chains and the physical cluster of HiveD (OSDI 2020).

A :class:`CellType` names a child type and a child count; a type that no ``CellType`` defines is a *leaf* type (one
device, one GPU). A **chain** is the family of trees named by a top-level cell type: the types along
``top -> child -> ... -> leaf`` are its levels, numbered like HiveD's code from ``1`` (leaf) to ``L`` (top). Exactly
one type of a chain is node level (one machine); levels above it are racks / pools, levels below sockets, PCIe
switches and GPUs.

:class:`PhysicalCluster` instantiates top-level cells (a forest) from :class:`PhysicalCellSpec` entries, infers the
addresses of omitted children the way hivedscheduler does (``pkg/api/config.go``: below the node level the default
address is the index within the node, i.e. the GPU index; above it the index among same-level cells of the top-level
cell; a top cell's default address is its index in ``physicalCells``), and stores the forest both as a networkx
``DiGraph`` (``cluster.graph``) and as flat numpy arrays in DFS preorder (every subtree is a contiguous id range), which
the feasibility model and the allocator use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:  # networkx (~0.1 s to import) only where the graph is asked for
    import networkx as nx

__all__ = [
    "CellType",
    "Chain",
    "PhysicalCellSpec",
    "PhysicalCluster",
    "generate_cluster",
]

#: The largest cluster built, in GPUs (leaf cells), and so the largest ``childCellNumber`` of one cell type: a bigger
#: one is an :class:`InputError`, not a build of 10**18 cells that hangs or runs out of memory. Cells are built one by
#: one (about 10-20 us each): issue 20's long fuzz run found 2**20 a hang (one rack of 128,629 nodes, about 10**6
#: GPUs, took 26 s to build and 12 s more to allocate over); 2**16 GPUs build in about a second, 30 times the
#: largest published HiveD cluster.
MAX_GPUS = 2**16
#: The most levels a chain may have (top to leaf). Published HiveD configs have 3 to 6 (rack, node, socket, PCIe
#: switch, GPU); the cap keeps every walk of the hierarchy short (issue 25's fuzz built a chain thousands of levels
#: deep, which raised RecursionError: the builder now walks without recursion, and a chain this deep is refused).
MAX_LEVELS = 64


@dataclass(frozen=True)
class CellType:
    """A cell type: ``child_count`` cells of ``child_type`` (buddies). ``is_node_level``: one machine exactly."""

    name: str
    child_type: str
    child_count: int
    is_node_level: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("cell_type.name", self.name, "must be a non-empty string")
        if not isinstance(self.child_type, str) or not self.child_type:
            raise InputError(f"cellTypes.{self.name}.childCellType", self.child_type, "must be a non-empty string")
        if isinstance(self.child_count, bool) or not isinstance(self.child_count, int | np.integer) or self.child_count < 1:
            raise InputError(f"cellTypes.{self.name}.childCellNumber", self.child_count, "must be a positive integer")
        if self.child_count > MAX_GPUS:
            raise InputError(f"cellTypes.{self.name}.childCellNumber", self.child_count,
                             f"exceeds hived.MAX_GPUS = {MAX_GPUS} (the largest cluster built)")
        if not isinstance(self.is_node_level, bool):
            raise InputError(f"cellTypes.{self.name}.isNodeLevel", self.is_node_level, "must be true or false")


@dataclass(frozen=True)
class Chain:
    """One chain: ``types[k]`` is the type name at level ``k`` (``types[0]`` unused, ``types[1]`` the leaf type).

    ``child_count[k]`` is the number of level-(k-1) children of a level-k cell (``child_count[1] == 0``);
    ``gpus[k]`` the number of leaves (GPUs) of a level-k cell; ``node_level`` the level of the node type.
    """

    name: str
    types: tuple[str, ...]
    child_count: tuple[int, ...]
    gpus: tuple[int, ...]
    node_level: int

    @property
    def levels(self) -> int:
        """Number of levels ``L`` (the top level)."""
        return len(self.types) - 1

    @property
    def leaf_type(self) -> str:
        return self.types[1]

    def level_of(self, type_name: str) -> int:
        try:
            return self.types.index(type_name, 1)
        except ValueError:
            raise InputError("cellType", type_name, f"is no level of chain {self.name!r} ({list(self.types[1:])})") from None

    def span(self, upper: int, lower: int) -> int:
        """How many level-``lower`` cells one level-``upper`` cell holds (``upper >= lower``)."""
        return int(self.gpus[upper] // self.gpus[lower])

    def level_for_gpus(self, gpus: int) -> int | None:
        """The smallest level whose cell holds ``gpus`` GPUs (``None`` when even the top cell is too small)."""
        for k in range(1, self.levels + 1):
            if self.gpus[k] >= gpus:
                return k
        return None


@dataclass
class PhysicalCellSpec:
    """One physical cell as written in a hivedscheduler config (``cellType``, ``cellAddress``, ``pinnedCellId``,
    ``cellChildren``). ``address``/``children`` may be omitted (``None``); they are inferred."""

    cell_type: str | None = None
    address: str | None = None
    pinned_id: str | None = None
    children: list[PhysicalCellSpec] | None = None

    @classmethod
    def from_dict(cls, d: Any, path: str) -> PhysicalCellSpec:
        """The spec of a hivedscheduler-style dict and its ``cellChildren``, read without recursion (a config nested
        deeper than Python's recursion limit is read like any other; issue 25)."""
        root = cls()
        stack: list[tuple[Any, str, PhysicalCellSpec]] = [(d, path, root)]
        while stack:
            item, where, out = stack.pop()
            kids = cls._fields_from(item, where, out)
            if kids:
                out.children = [cls() for _ in kids]
                stack.extend((c, f"{where}.cellChildren[{i}]", out.children[i]) for i, c in enumerate(kids))
        return root

    @staticmethod
    def _fields_from(d: Any, path: str, out: PhysicalCellSpec) -> list[Any]:
        """Fill ``out`` from the mapping ``d`` (one level); return its children's raw entries."""
        if d is None:
            return []
        if not isinstance(d, Mapping):
            raise InputError(path, d, "must be a mapping with cellType / cellAddress / pinnedCellId / cellChildren")
        unknown = set(d) - {"cellType", "cellAddress", "pinnedCellId", "cellChildren"}
        if unknown:
            raise InputError(f"{path}.{sorted(unknown)[0]}", d[sorted(unknown)[0]], "is no physical cell field")
        ct = d.get("cellType")
        if ct is not None and not isinstance(ct, str):
            raise InputError(f"{path}.cellType", ct, "must be a string")
        addr = d.get("cellAddress")
        if addr is not None and not isinstance(addr, str | int):
            raise InputError(f"{path}.cellAddress", addr, "must be a string or an integer")
        if isinstance(addr, bool):
            raise InputError(f"{path}.cellAddress", addr, "must be a string or an integer")
        pin = d.get("pinnedCellId")
        if pin is not None and not isinstance(pin, str):
            raise InputError(f"{path}.pinnedCellId", pin, "must be a string")
        ch = d.get("cellChildren")
        if ch is not None and not isinstance(ch, list):
            raise InputError(f"{path}.cellChildren", ch, "must be a list")
        out.cell_type, out.address, out.pinned_id = ct, None if addr is None or addr == "" else str(addr), pin
        return list(ch or [])


def _build_chains(cell_types: Mapping[str, CellType], tops: Iterable[str], path: str) -> dict[str, Chain]:
    chains: dict[str, Chain] = {}
    for top in tops:
        if top in chains:
            continue
        names = [top]
        seen = {top}
        while names[-1] in cell_types:
            nxt = cell_types[names[-1]].child_type
            if nxt in seen:
                raise InputError(f"cellTypes.{names[-1]}.childCellType", nxt, "forms a cycle")
            seen.add(nxt)
            names.append(nxt)
            if len(names) > MAX_LEVELS:
                raise InputError(f"{path}.cellType", top,
                                 f"chain {top!r} has more than hived.MAX_LEVELS = {MAX_LEVELS} levels")
        names.reverse()  # leaf first
        node = [i + 1 for i, t in enumerate(names) if t in cell_types and cell_types[t].is_node_level]
        if len(node) != 1:
            raise InputError(
                f"{path}.cellType",
                top,
                f"chain {' > '.join(reversed(names))} must contain exactly one node-level cell type (has {len(node)})",
            )
        counts = [0, 0] + [int(cell_types[t].child_count) for t in names[1:]]
        gpus = [0, 1]
        for k in range(2, len(names) + 1):
            gpus.append(gpus[-1] * counts[k])
        chains[top] = Chain(top, ("", *names), tuple(counts), tuple(gpus), node[0])
    return chains


class PhysicalCluster:
    """The physical cluster: a forest of top-level cells grouped into chains.

    ``PhysicalCluster(cell_types, physical_cells)``: ``cell_types`` a mapping name -> :class:`CellType` (or an
    iterable of them); ``physical_cells`` a sequence of :class:`PhysicalCellSpec` (or hivedscheduler-style dicts).

    Arrays (length ``n_cells``, DFS preorder, so ``cell .. end[cell]`` is the subtree): ``chain_index``, ``level``,
    ``parent`` (-1 at the top), ``end``, ``node_cell`` (the node-level ancestor-or-self, -1 above the node level),
    ``leaf_lo``/``leaf_hi`` (the subtree's leaves in global leaf order); lists ``address`` (full address
    ``top/child/...``), ``local_address``, ``children``; ``cells_at[(chain, level)]`` the ids of one level.
    """

    def __init__(
        self,
        cell_types: Mapping[str, CellType] | Iterable[CellType],
        physical_cells: Sequence[PhysicalCellSpec | Mapping[str, Any]],
        *,
        sku_types: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(cell_types, Mapping):
            ct = dict(cell_types)
            for k, v in ct.items():
                if not isinstance(v, CellType):
                    raise InputError(f"cellTypes.{k}", v, "must be a CellType")
                if v.name != k:
                    raise InputError(f"cellTypes.{k}", v.name, "CellType.name differs from its key")
        else:
            ct = {}
            for v in cell_types:
                if not isinstance(v, CellType):
                    raise InputError("cellTypes", v, "must hold CellType objects")
                if v.name in ct:
                    raise InputError(f"cellTypes.{v.name}", v.name, "is defined twice")
                ct[v.name] = v
        self.cell_types: dict[str, CellType] = ct
        self.sku_types: dict[str, Any] = dict(sku_types or {})
        specs: list[PhysicalCellSpec] = []
        if not isinstance(physical_cells, Sequence) or isinstance(physical_cells, str):
            raise InputError("physicalCells", physical_cells, "must be a list")
        for i, s in enumerate(physical_cells):
            if isinstance(s, PhysicalCellSpec):
                specs.append(s)
            else:
                specs.append(PhysicalCellSpec.from_dict(s, f"physicalCells[{i}]"))
        for i, s in enumerate(specs):
            if s.cell_type is None:
                raise InputError(f"physicalCells[{i}].cellType", None, "is missing")
            if s.cell_type not in ct:
                raise InputError(f"physicalCells[{i}].cellType", s.cell_type, "names no cellType")
        self.chains: dict[str, Chain] = {}
        for i, s in enumerate(specs):
            self.chains.update(_build_chains(ct, [s.cell_type], f"physicalCells[{i}]"))  # type: ignore[list-item]
        self.chain_names: list[str] = list(self.chains)
        total = 0
        for i, s in enumerate(specs):
            ch = self.chains[s.cell_type]  # type: ignore[index]
            total += ch.gpus[ch.levels]
            if total > MAX_GPUS:
                raise InputError(f"physicalCells[{i}]", s.cell_type,
                                 f"makes the cluster exceed hived.MAX_GPUS = {MAX_GPUS} GPUs")
        self._build(specs)

    # ------------------------------------------------------------------ build
    def _build(self, specs: list[PhysicalCellSpec]) -> None:
        chain_idx: list[int] = []
        level: list[int] = []
        parent: list[int] = []
        end: list[int] = []
        node_cell: list[int] = []
        address: list[str] = []
        local: list[str] = []
        node_label: list[str] = []
        children: list[list[int]] = []
        gpu_index: list[int] = []
        leaf_lo: list[int] = []
        pinned: dict[str, int] = {}
        leaf_count = [0]
        out_specs: list[PhysicalCellSpec] = []

        def visit(spec: PhysicalCellSpec, chain: Chain, ci: int, k: int, par: int, default: int, prefix: str,
                  node: int, path: str, holder: list[PhysicalCellSpec]) -> list[tuple[Any, ...]]:
            """Add one cell (preorder id), append its output spec to ``holder``; return its children's frames."""
            tname = chain.types[k]
            if spec.cell_type is not None and spec.cell_type != tname:
                raise InputError(f"{path}.cellType", spec.cell_type, f"must be {tname!r} (the child type here)")
            loc = spec.address if spec.address is not None else str(default)
            full = prefix + loc
            cid = len(level)
            chain_idx.append(ci)
            level.append(k)
            parent.append(par)
            end.append(-1)
            if k == chain.node_level:
                node = cid
            node_cell.append(node if k <= chain.node_level else -1)
            address.append(full)
            local.append(loc)
            node_label.append(loc if spec.address is not None else full)
            children.append([])
            leaf_lo.append(leaf_count[0])
            if spec.pinned_id is not None:
                if spec.pinned_id in pinned:
                    raise InputError(f"{path}.pinnedCellId", spec.pinned_id, "is used by two physical cells")
                pinned[spec.pinned_id] = cid
            if par >= 0:
                children[par].append(cid)
            out = PhysicalCellSpec(tname, loc, spec.pinned_id, None)
            holder.append(out)
            frames: list[tuple[Any, ...]] = []
            if k == 1:
                try:
                    gi = int(loc)
                except ValueError:
                    raise InputError(f"{path}.cellAddress", loc, "a leaf cell's address is its GPU index (an integer)") from None
                gpu_index.append(gi)
                leaf_count[0] += 1
                if spec.children:
                    raise InputError(f"{path}.cellChildren", len(spec.children), f"leaf cell type {tname!r} has no children")
            else:
                n = chain.child_count[k]
                kids = spec.children or []
                if kids and len(kids) != n:
                    raise InputError(
                        f"{path}.cellChildren", len(kids), f"cellType {tname!r} has childCellNumber {n}; list all or none"
                    )
                base = 0 if k == chain.node_level else default
                out.children = []
                frames = [(kids[i] if kids else PhysicalCellSpec(), chain, ci, k - 1, cid, base * n + i, full + "/", node,
                           f"{path}.cellChildren[{i}]", out.children) for i in range(n)]
            return [("end", cid), *frames]

        # a depth-first walk with an explicit stack (no recursion, whatever the chain's depth; issue 25): a frame is
        # a cell to visit or ("end", id), which closes the cell's subtree once every descendant has its id
        for i, s in enumerate(specs):
            chain = self.chains[s.cell_type]  # type: ignore[index]
            ci = self.chain_names.index(chain.name)
            stack: list[tuple[Any, ...]] = [(s, chain, ci, chain.levels, -1, i, "", -1, f"physicalCells[{i}]", out_specs)]
            while stack:
                f = stack.pop()
                if f[0] == "end":
                    end[f[1]] = len(level)
                    continue
                got = visit(*f)
                # children are visited in order, then the parent's end: push them reversed, the end first
                stack.append(got[0])
                stack.extend(reversed(got[1:]))

        n = len(level)
        self.n_cells = n
        self.chain_index = np.asarray(chain_idx, dtype=np.int64)
        self.level = np.asarray(level, dtype=np.int64)
        self.parent = np.asarray(parent, dtype=np.int64)
        self.end = np.asarray(end, dtype=np.int64)
        self.node_cell = np.asarray(node_cell, dtype=np.int64)
        self.address: list[str] = address
        self.local_address: list[str] = local
        self.children: list[list[int]] = children
        self.leaf_lo = np.asarray(leaf_lo, dtype=np.int64)
        is_leaf = self.level == 1
        # leaves in preorder: leaf j is the j-th leaf cell; a subtree's leaves are contiguous
        leaf_cells = np.flatnonzero(is_leaf)
        self.leaf_cells = leaf_cells
        cum = np.concatenate([[0], np.cumsum(is_leaf)])
        self.leaf_hi = cum[self.end]
        self.gpu_index = np.asarray(gpu_index, dtype=np.int64)
        self.pinned: dict[str, int] = pinned
        self.specs: list[PhysicalCellSpec] = out_specs
        self.by_address: dict[str, int] = {}
        for cid, a in enumerate(address):
            if a in self.by_address:
                raise InputError("physicalCells.cellAddress", a, "two physical cells have the same full address")
            self.by_address[a] = cid
        self.cells_at: dict[tuple[str, int], np.ndarray] = {}
        order = np.lexsort((np.arange(n), self.level, self.chain_index))
        ch_sorted = self.chain_index[order]
        lv_sorted = self.level[order]
        for ci, cname in enumerate(self.chain_names):
            for k in range(1, self.chains[cname].levels + 1):
                sel = (ch_sorted == ci) & (lv_sorted == k)
                self.cells_at[(cname, k)] = order[sel]
        # position of each cell within its (chain, level) list
        self.pos_in_level = np.empty(n, dtype=np.int64)
        for arr in self.cells_at.values():
            self.pos_in_level[arr] = np.arange(arr.size)
        # node names: the address given to node-level cells (k8s node names; one name may appear in several chains);
        # a node whose address was inferred is named by its full address
        self.node_names: dict[str, list[int]] = {}
        self._node_label = node_label
        for node_cid in np.flatnonzero(self.node_cell == np.arange(n)).tolist():
            self.node_names.setdefault(node_label[node_cid], []).append(node_cid)
        seen: dict[tuple[str, int], int] = {}
        for j, leaf in enumerate(leaf_cells):
            key = (node_label[self.node_cell[leaf]], int(self.gpu_index[j]))
            if key in seen:
                raise InputError(
                    "physicalCells.cellAddress",
                    f"{key[0]} GPU {key[1]}",
                    f"device appears twice ({address[seen[key]]} and {address[leaf]})",
                )
            seen[key] = int(leaf)
        # ancestor table: anc[c, k] = ancestor-or-self of c at level k (-1 below c's level or beyond its top)
        lmax = max((c.levels for c in self.chains.values()), default=1)
        anc = np.full((n, lmax + 1), -1, dtype=np.int64)
        cur = np.arange(n)
        lv = self.level.copy()
        while True:
            ok = cur >= 0
            if not ok.any():
                break
            anc[np.flatnonzero(ok), lv[ok]] = cur[ok]
            nxt = np.where(ok, self.parent[np.maximum(cur, 0)], -1)
            lv = lv + 1
            cur = nxt
        self.ancestor = anc
        self.max_levels = lmax

    # --------------------------------------------------------------- queries
    @property
    def graph(self) -> nx.DiGraph:
        """The forest as a networkx DiGraph (edges parent -> child; node attributes chain, level, address, type)."""
        if getattr(self, "_graph", None) is None:
            import networkx as nx

            g = nx.DiGraph()
            types = [self.chains[self.chain_names[c]].types[k] for c, k in zip(self.chain_index, self.level)]
            g.add_nodes_from(
                (i, {"chain": self.chain_names[self.chain_index[i]], "level": int(self.level[i]),
                     "address": self.address[i], "cell_type": types[i]})
                for i in range(self.n_cells)
            )
            child = np.flatnonzero(self.parent >= 0)
            g.add_edges_from(zip(self.parent[child].tolist(), child.tolist()))
            self._graph = g
        return self._graph

    @property
    def num_gpus(self) -> int:
        return int(self.leaf_cells.size)

    def chain_of(self, cell: int) -> Chain:
        return self.chains[self.chain_names[int(self.chain_index[cell])]]

    def cell_type_of(self, cell: int) -> str:
        return self.chain_of(cell).types[int(self.level[cell])]

    def num_cells(self, chain: str, level: int) -> int:
        return int(self.cells_at[(chain, level)].size)

    def node_name(self, cell: int) -> str | None:
        """The machine (k8s node name) holding ``cell`` (``None`` above the node level)."""
        nc = int(self.node_cell[cell])
        return None if nc < 0 else self._node_label[nc]

    def gpus_of(self, cell: int) -> list[tuple[str, int]]:
        """The (node name, GPU index) pairs of a cell at or below the node level."""
        lo, hi = int(self.leaf_lo[cell]), int(self.leaf_hi[cell])
        return [(self._node_label[self.node_cell[self.leaf_cells[j]]], int(self.gpu_index[j])) for j in range(lo, hi)]

    def subtree(self, cell: int) -> range:
        return range(int(cell), int(self.end[cell]))

    def chain_for(self, name: str, path: str = "chain") -> Chain:
        if name not in self.chains:
            raise InputError(path, name, f"names no chain (top-level cell type used in physicalCells: {self.chain_names})")
        return self.chains[name]

    def chains_with_leaf(self, leaf_type: str) -> list[str]:
        return [c.name for c in self.chains.values() if c.leaf_type == leaf_type]

    def resolve_cell(self, key: Any, path: str) -> tuple[str, int]:
        """Turn a VC cell key into ``(chain, level)``.

        Accepted: ``"CHAIN.T1.T2"`` (hivedscheduler's fully qualified cellType: the chain's top type, then each
        child type down to the VC cell's type), ``(chain, level:int)`` or ``(chain, type_name)``.
        """
        if isinstance(key, str):
            parts = key.split(".")
            chain = self.chain_for(parts[0], path)
            level = chain.levels
            for p in parts[1:]:
                if level == 1 or chain.types[level - 1] != p:
                    raise InputError(path, key, f"{p!r} is not the child type of {chain.types[level]!r} in chain {chain.name!r}")
                level -= 1
            return chain.name, level
        if isinstance(key, tuple) and len(key) == 2:
            chain = self.chain_for(key[0], path)
            lv = key[1]
            if isinstance(lv, str):
                return chain.name, chain.level_of(lv)
            if isinstance(lv, int | np.integer) and not isinstance(lv, bool) and 1 <= lv <= chain.levels:
                return chain.name, int(lv)
            raise InputError(path, key, f"level must be 1..{chain.levels} or a type name of chain {chain.name!r}")
        raise InputError(path, key, "must be 'CHAIN.TYPE...' or (chain, level) or (chain, type name)")

    def node_cells_of(self, node: str) -> list[int]:
        if node not in self.node_names:
            raise InputError("node", node, "names no node-level cell")
        return self.node_names[node]

    def bad_cell_mask(self, bad_nodes: Iterable[str]) -> np.ndarray:
        """Cells that cannot be given whole to a VC: those containing, or inside, a bad node."""
        bad = np.zeros(self.n_cells, dtype=bool)
        for name in bad_nodes:
            for nc in self.node_cells_of(name):
                bad[nc : self.end[nc]] = True
                a = int(self.parent[nc])
                while a >= 0:
                    bad[a] = True
                    a = int(self.parent[a])
        return bad

    def __repr__(self) -> str:
        parts = ", ".join(f"{c}: {self.num_cells(c, self.chains[c].levels)}x{self.chains[c].gpus[-1]} GPUs" for c in self.chain_names)
        return f"<PhysicalCluster {self.num_gpus} GPUs, {self.n_cells} cells; {parts}>"


# ---------------------------------------------------------------------------------------------------- generators
@dataclass
class _Shape:
    gpu_type: str
    racks: int
    nodes_per_rack: int
    sockets: int
    pcie: int
    gpus_per_pcie: int
    names: list[str] = field(default_factory=list)


def generate_cluster(
    gpus: int = 2048,
    *,
    gpu_types: Sequence[str] = ("V100",),
    nodes_per_rack: int = 16,
    sockets_per_node: int = 2,
    pcie_per_socket: int = 2,
    gpus_per_pcie: int = 2,
) -> PhysicalCluster:
    """A large rack / node / socket / PCIe switch / GPU topology (one chain per GPU type).

    ``gpus`` is split evenly over ``gpu_types``; each chain's top cell is a rack of ``nodes_per_rack`` nodes (racks
    are rounded up so at least ``gpus`` GPUs exist). Node names are ``<type>-r<rack>-n<node>``.
    """
    for nm, v in (("gpus", gpus), ("nodes_per_rack", nodes_per_rack), ("sockets_per_node", sockets_per_node),
                  ("pcie_per_socket", pcie_per_socket), ("gpus_per_pcie", gpus_per_pcie)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise InputError(nm, v, "must be a positive integer")
        if v > MAX_GPUS:
            raise InputError(nm, v, f"exceeds hived.MAX_GPUS = {MAX_GPUS} (the largest cluster built)")
    gpus, nodes_per_rack, sockets_per_node = int(gpus), int(nodes_per_rack), int(sockets_per_node)
    pcie_per_socket, gpus_per_pcie = int(pcie_per_socket), int(gpus_per_pcie)
    if isinstance(gpu_types, str | bytes) or not isinstance(gpu_types, Sequence) or not gpu_types:
        raise InputError("gpu_types", gpu_types, "must be a non-empty list of GPU type names")
    for i, t in enumerate(gpu_types):
        if not isinstance(t, str) or not t.strip() or not t.isprintable() or "." in t or "/" in t:
            raise InputError(f"gpu_types[{i}]", t, "must be a non-empty printable name without '.' or '/'")
    if len(set(gpu_types)) != len(gpu_types):
        raise InputError("gpu_types", gpu_types, "must be distinct")
    per_node = sockets_per_node * pcie_per_socket * gpus_per_pcie
    per_rack = per_node * nodes_per_rack
    each = -(-gpus // len(gpu_types))
    if len(gpu_types) * -(-each // per_rack) * per_rack > MAX_GPUS:
        raise InputError("gpus", gpus, f"with racks of {per_rack} GPUs, the cluster exceeds hived.MAX_GPUS = {MAX_GPUS}")
    types: list[CellType] = []
    specs: list[PhysicalCellSpec] = []
    for t in gpu_types:
        types += [
            CellType(f"{t}-PCIE", t, gpus_per_pcie),
            CellType(f"{t}-SOCKET", f"{t}-PCIE", pcie_per_socket),
            CellType(f"{t}-NODE", f"{t}-SOCKET", sockets_per_node, is_node_level=True),
            CellType(f"{t}-RACK", f"{t}-NODE", nodes_per_rack),
        ]
        racks = -(-each // per_rack)
        for r in range(racks):
            kids = [PhysicalCellSpec(address=f"{t.lower()}-r{r:03d}-n{n:02d}") for n in range(nodes_per_rack)]
            specs.append(PhysicalCellSpec(f"{t}-RACK", f"{t.lower()}-rack{r:03d}", None, kids))
    return PhysicalCluster(types, specs)
