"""Read and write the ``physicalCluster`` and ``virtualClusters`` sections of a hivedscheduler YAML config.

Format (hivedscheduler ``pkg/api``): ``physicalCluster.cellTypes`` maps a type to ``childCellType``,
``childCellNumber`` and ``isNodeLevel``; ``physicalCluster.physicalCells`` lists top cells with ``cellType``,
``cellAddress``, ``pinnedCellId`` and ``cellChildren`` (omitted children and addresses are inferred);
``virtualClusters`` maps a VC name to ``virtualCells`` (``cellType`` fully qualified from the chain's top type, e.g.
``4-DGX2-V100-NODE.2-DGX2-V100-NODE``, and ``cellNumber``) and ``pinnedCells`` (``pinnedCellId``). ``skuTypes`` /
``gpuTypes`` are kept but not used. An OpenPAI ``services-configuration`` document (``hivedscheduler.config`` holding
the YAML text) is accepted too. Loading checks structure and names, never quota validity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..errors import InputError
from ..instances import check_keys
from .cells import MAX_GPUS, CellType, PhysicalCellSpec, PhysicalCluster
from .vc import VirtualCluster

__all__ = ["dump_hived_config", "load_hived_config", "qualified_type"]


def _mapping(v: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise InputError(path, v if not isinstance(v, list) else f"list of {len(v)}", "must be a mapping")
    return v


#: A document expands to at most this many YAML nodes, an alias counted at every use: a config of the largest
#: cluster built (:data:`~schedopt.hived.cells.MAX_GPUS` GPUs, every cell written out) has well under a million,
#: while a few hundred bytes of nested aliases (a "billion laughs" document) expand to billions.
MAX_YAML_NODES = 2_000_000
#: ... and nests at most this deep (a hivedscheduler config nests about 10 levels; PyYAML's composer recurses).
MAX_YAML_DEPTH = 200


class _Walk:
    """One pass over the composed YAML graph, each distinct node once: the first key written twice in one mapping
    (PyYAML would keep the last one silently), a node that contains itself through an alias, nesting past
    :data:`MAX_YAML_DEPTH`, and the size the document expands to (aliases counted at every use, by memo: linear in
    the distinct nodes) past :data:`MAX_YAML_NODES` are :class:`InputError` naming the key path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.size: dict[int, int] = {}
        self.active: set[int] = set()

    def fail(self, path: str, value: object, message: str) -> InputError:
        return InputError(f"{self.source}:{path}" if path else self.source, value, message)

    def walk(self, node: yaml.Node, path: str, depth: int) -> int:
        key = id(node)
        if key in self.active:
            raise self.fail(path, "<yaml alias>", "contains itself through an alias (a recursive document has no "
                            "end; a hivedscheduler config is a tree)")
        if key in self.size:
            return self.size[key]
        if depth > MAX_YAML_DEPTH:
            raise self.fail(path, "<yaml text>", f"is nested deeper than MAX_YAML_DEPTH = {MAX_YAML_DEPTH} levels "
                            "(a hivedscheduler config nests about 10)")
        self.active.add(key)
        n = 1
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                k = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "<complex key>"
                line = key_node.start_mark.line + 1
                sub = f"{path}.{k}" if path else k
                if k in seen and k != "<<":
                    raise self.fail(sub, "<yaml text>", f"is written twice (lines {seen[k]} and {line}); a key may "
                                    "appear once")
                seen[k] = line
                n += self.walk(key_node, sub, depth + 1) + self.walk(value_node, sub, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                n += self.walk(item, f"{path}[{i}]", depth + 1)
        self.active.discard(key)
        self.size[key] = n
        if n > MAX_YAML_NODES:
            raise self.fail(path, n, f"expands to {n:,} YAML nodes through aliases, more than MAX_YAML_NODES = "
                            f"{MAX_YAML_NODES:,} (nested aliases: a billion-laughs document?)")
        return n


_OPEN, _CLOSE = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)


def _flow_depth(text: str) -> int:
    """The deepest nesting of flow brackets (``[`` and ``{``), counted at C speed before PyYAML's pure-Python scanner
    sees the text (100,000 brackets took it seconds): brackets inside quoted strings are counted too, so this
    bounds the depth from above."""
    b = np.frombuffer(text.encode("utf-8", "surrogateescape"), np.uint8)
    if not b.size:
        return 0
    step = np.isin(b, _OPEN).astype(np.int32) - np.isin(b, _CLOSE).astype(np.int32)
    return int(np.cumsum(step).max())


def read_yaml(text: str, source: str) -> Any:
    """Parse YAML ``text`` (from ``source``, named in errors), walking it with limits first (:class:`_Walk`): a key
    written twice, a recursive alias, nesting past :data:`MAX_YAML_DEPTH` or an expansion past
    :data:`MAX_YAML_NODES` is an error naming the key path."""
    depth = _flow_depth(text)
    if depth > MAX_YAML_DEPTH:
        raise InputError(source, "<yaml text>", f"nests {depth} brackets deep, more than MAX_YAML_DEPTH = "
                         f"{MAX_YAML_DEPTH} (a hivedscheduler config nests about 10 levels)")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None:
            _Walk(source).walk(root, "", 0)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(source, "<yaml text>", f"is not valid YAML: {exc}") from exc
    except RecursionError:
        raise InputError(source, "<yaml text>", f"is nested deeper than the YAML parser can follow (a "
                         f"hivedscheduler config nests about 10 levels; MAX_YAML_DEPTH = {MAX_YAML_DEPTH})") from None


def _read_file(path: str | Path) -> Any:
    p = Path(path)
    if not p.exists():
        raise InputError("path", str(path), "does not exist")
    if p.is_dir():
        raise InputError("path", str(path), "is a directory, not a YAML file")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("path", str(path), f"is not UTF-8 text (byte {exc.start}): {exc.reason}") from exc
    except OSError as exc:
        raise InputError("path", str(path), f"cannot be read: {exc.strerror or exc}") from exc
    return read_yaml(text, str(path))


#: The top-level keys of a hivedscheduler config (pkg/api Config); any other is rejected as a likely misspelling.
CONFIG_KEYS = frozenset({"physicalCluster", "virtualClusters", "kubeApiServerAddress", "kubeConfigFilePath",
                         "webServerAddress", "waitingPodSchedulingBlockMilliSec"})


def load_hived_config(path_or_dict: str | Path | Mapping[str, Any]) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    """``(cluster, vcs)`` from a hivedscheduler YAML config file (path) or the already-parsed dict.

    Errors are :class:`InputError` naming the key path (prefixed with the file, ``FILE:physicalCluster...``, when
    read from a file): a directory, non-UTF-8 text, invalid YAML, a key written twice, an unknown key, a size above
    ``schedopt.hived.cells.MAX_GPUS``."""
    if isinstance(path_or_dict, str | Path):
        doc = _read_file(path_or_dict)
        try:
            return _load_doc(doc)
        except InputError as exc:
            raise InputError(f"{path_or_dict}:{exc.field}", exc.value, exc.message) from exc
    return _load_doc(path_or_dict)


def _load_doc(doc: Any) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    doc = _mapping(doc, "config")
    if "hivedscheduler" in doc and "physicalCluster" not in doc:  # OpenPAI services-configuration.yaml
        inner = _mapping(doc["hivedscheduler"], "hivedscheduler").get("config")
        if isinstance(inner, str):
            inner = read_yaml(inner, "hivedscheduler.config")
        doc = _mapping(inner, "hivedscheduler.config")
    if "physicalCluster" not in doc:
        raise InputError("physicalCluster", None, "is missing")
    for k in doc:
        if k not in CONFIG_KEYS:
            raise InputError(str(k), doc[k], f"is no known field of a hivedscheduler config (expected one of {sorted(CONFIG_KEYS)})")
    pc = _mapping(doc["physicalCluster"], "physicalCluster")
    check_keys(pc, {"skuTypes", "gpuTypes", "cellTypes", "physicalCells"}, "physicalCluster")
    cts_raw = _mapping(pc.get("cellTypes"), "physicalCluster.cellTypes")
    cell_types: dict[str, CellType] = {}
    for name, spec in cts_raw.items():
        path = f"physicalCluster.cellTypes.{name}"
        spec = _mapping(spec, path)
        check_keys(spec, {"childCellType", "childCellNumber", "isNodeLevel"}, path)
        for req in ("childCellType", "childCellNumber"):
            if req not in spec:
                raise InputError(f"{path}.{req}", None, "is missing")
        child, num, node = spec["childCellType"], spec["childCellNumber"], spec.get("isNodeLevel", False)
        if not isinstance(child, str):
            raise InputError(f"{path}.childCellType", child, "must be a string")
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise InputError(f"{path}.childCellNumber", num, "must be a positive integer")
        if num > MAX_GPUS:
            raise InputError(f"{path}.childCellNumber", num, f"exceeds hived.MAX_GPUS = {MAX_GPUS} (the largest cluster built)")
        if not isinstance(node, bool):
            raise InputError(f"{path}.isNodeLevel", node, "must be true or false")
        cell_types[str(name)] = CellType(str(name), child, num, node)
    cells_raw = pc.get("physicalCells")
    if not isinstance(cells_raw, list) or not cells_raw:
        raise InputError("physicalCluster.physicalCells", cells_raw, "must be a non-empty list")
    specs = [PhysicalCellSpec.from_dict(c, f"physicalCluster.physicalCells[{i}]") for i, c in enumerate(cells_raw)]
    for i, s in enumerate(specs):
        if s.cell_type is None:
            raise InputError(f"physicalCluster.physicalCells[{i}].cellType", None, "is missing")
        if s.cell_type not in cell_types:
            raise InputError(f"physicalCluster.physicalCells[{i}].cellType", s.cell_type, "names no cellType")
    sku = pc.get("skuTypes", pc.get("gpuTypes")) or {}
    try:
        cluster = PhysicalCluster(cell_types, specs, sku_types=_mapping(sku, "physicalCluster.skuTypes"))
    except InputError as exc:
        if exc.field.startswith("physicalCells"):
            raise InputError(f"physicalCluster.{exc.field}", exc.value, exc.message) from exc
        raise
    vcs: list[VirtualCluster] = []
    vcs_raw = _mapping(doc.get("virtualClusters") or {}, "virtualClusters")
    owner: dict[str, str] = {}
    for vname, vspec in vcs_raw.items():
        path = f"virtualClusters.{vname}"
        vspec = _mapping(vspec or {}, path)
        check_keys(vspec, {"virtualCells", "pinnedCells", "weight"}, path)
        cells: dict[str, int] = {}
        vcells = vspec.get("virtualCells") or []
        if not isinstance(vcells, list):
            raise InputError(f"{path}.virtualCells", vcells, "must be a list")
        for i, c in enumerate(vcells):
            cp = f"{path}.virtualCells[{i}]"
            c = _mapping(c, cp)
            check_keys(c, {"cellType", "cellNumber"}, cp)
            ct, num = c.get("cellType"), c.get("cellNumber")
            if not isinstance(ct, str):
                raise InputError(f"{cp}.cellType", ct, "must be a fully qualified cellType string")
            if isinstance(num, bool) or not isinstance(num, int) or num < 0:
                raise InputError(f"{cp}.cellNumber", num, "must be a non-negative integer")
            if num > MAX_GPUS:
                raise InputError(f"{cp}.cellNumber", num, f"exceeds hived.MAX_GPUS = {MAX_GPUS} (no cluster has that many cells)")
            cluster.resolve_cell(ct, f"{cp}.cellType")
            cells[ct] = cells.get(ct, 0) + num
        pins: list[str] = []
        praw = vspec.get("pinnedCells") or []
        if not isinstance(praw, list):
            raise InputError(f"{path}.pinnedCells", praw, "must be a list")
        for i, pcell in enumerate(praw):
            pp = f"{path}.pinnedCells[{i}]"
            pcell = _mapping(pcell, pp)
            check_keys(pcell, {"pinnedCellId"}, pp)
            pid = pcell.get("pinnedCellId")
            if not isinstance(pid, str) or pid not in cluster.pinned:
                raise InputError(f"{pp}.pinnedCellId", pid, "names no pinnedCellId of physicalCells")
            if pid in owner:
                raise InputError(f"{pp}.pinnedCellId", pid, f"is already pinned to VC {owner[pid]!r}")
            owner[pid] = str(vname)
            pins.append(pid)
        weight = vspec.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            raise InputError(f"{path}.weight", weight, "must be a positive number")
        vcs.append(VirtualCluster(str(vname), cells, pins, float(weight)))
    return cluster, vcs


def qualified_type(cluster: PhysicalCluster, chain: str, level: int) -> str:
    """hivedscheduler's fully qualified cellType of a (chain, level): ``TOP.CHILD...``."""
    ch = cluster.chains[chain]
    return ".".join(ch.types[k] for k in range(ch.levels, level - 1, -1))


def _dump_cell(spec: PhysicalCellSpec, cluster: PhysicalCluster, chain: str, level: int, default: int) -> dict[str, Any]:
    ch = cluster.chains[chain]
    out: dict[str, Any] = {}
    if spec.address is not None and spec.address != str(default):
        out["cellAddress"] = int(spec.address) if level == 1 and spec.address.isdigit() else spec.address
    if spec.pinned_id is not None:
        out["pinnedCellId"] = spec.pinned_id
    if spec.children:
        n = ch.child_count[level]
        base = 0 if level == ch.node_level else default
        kids = [_dump_cell(c, cluster, chain, level - 1, base * n + i) for i, c in enumerate(spec.children)]
        if any(kids):
            out["cellChildren"] = kids
    return out


def dump_hived_config(
    cluster: PhysicalCluster, vcs: Sequence[VirtualCluster], path: str | Path | None = None
) -> dict[str, Any]:
    """The ``physicalCluster`` / ``virtualClusters`` document of ``cluster`` and ``vcs`` (written as YAML to
    ``path`` when given). Addresses equal to the inferred defaults are omitted."""
    cts = {
        name: {"childCellType": t.child_type, "childCellNumber": int(t.child_count), **({"isNodeLevel": True} if t.is_node_level else {})}
        for name, t in cluster.cell_types.items()
    }
    cells = []
    for i, s in enumerate(cluster.specs):
        d = {"cellType": s.cell_type, **_dump_cell(s, cluster, s.cell_type, cluster.chains[s.cell_type].levels, i)}  # type: ignore[index, arg-type]
        cells.append(d)
    pc: dict[str, Any] = {}
    if cluster.sku_types:
        pc["skuTypes"] = dict(cluster.sku_types)
    pc["cellTypes"] = cts
    pc["physicalCells"] = cells
    vdoc: dict[str, Any] = {}
    for v in vcs:
        vc_cells = []
        for key, num in v.cells.items():
            c, k = cluster.resolve_cell(key, f"virtualClusters.{v.name}.virtualCells")
            vc_cells.append({"cellType": qualified_type(cluster, c, k), "cellNumber": int(num)})
        entry: dict[str, Any] = {"virtualCells": vc_cells}
        if v.pinned:
            entry["pinnedCells"] = [{"pinnedCellId": p} for p in v.pinned]
        if v.weight != 1.0:
            entry["weight"] = float(v.weight)
        vdoc[v.name] = entry
    doc = {"physicalCluster": pc, "virtualClusters": vdoc}
    if path is not None:
        Path(path).write_text(yaml.safe_dump(doc, sort_keys=False))
    return doc
