"""The simulator's registries: policies, placers, admission rules and simulated systems (families).

Every role a user replaces is found here by name, never by a string the engine branches on:

* **Policies** (:func:`register_policy`, :func:`make_policy`): the built-in ones (``sia``, ``pollux``, ``gavel``,
  ``tiresias``, ``fifo``, ...), those of installed packages (the entry-point group ``schedopt.policies``: ``name =
  "module:Factory"``) and a user's class named ``module:Class`` on the command line.
* **Placers** and **admission rules** (:func:`register_placer`, :func:`register_admission`; groups
  ``schedopt.placers`` and ``schedopt.admissions``), see :mod:`schedopt.sim.roles`.
* **Systems** (:mod:`schedopt.sim.families`: ``register_system``, ``system_for``): the families that run a task on
  the engine with their own clusters, workloads and policies (group ``schedopt.sim_systems``).

This module is the bottom of the simulator's layers: it imports none of the simulator's roles. The typed makers
sit with their roles: :func:`schedopt.sim.policies.make_policy`, :func:`schedopt.sim.roles.make_placer` and
:func:`~schedopt.sim.roles.make_admission`.

A spec is ``name[:key=value]...``: ``sia:backend=highs:p=-1``, ``fifo:backfill=true``, ``mymod:MyPolicy:k=3``.
Options are checked against the factory's declared parameters (an unknown name is refused with the closest known
one) and converted to their annotated type (booleans strictly: ``true/false/yes/no/1/0``).
"""

from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata

from ..errors import InputError
from .limits import parse_bool  # the simulator's one strict boolean parser (issue 25); importable from here too

__all__ = [
    "OptionValue",
    "RoleEntry",
    "RoleSpec",
    "admissions",
    "make",
    "parse_bool",
    "parse_spec",
    "placers",
    "policies",
    "policy_entry",
    "register_admission",
    "register_placer",
    "register_policy",
    "reload_entry_points",
    "restore",
    "role_name",
    "snapshot",
]

#: a policy option's value as written in a spec or passed from Python
OptionValue = bool | int | float | str | None

def _literal(text: str) -> OptionValue:
    """``key=value`` text to a value: booleans stay strings here (the factory's annotation decides), numbers are
    parsed, ``none`` is None."""
    t = text.strip()
    if t.lower() in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


@dataclass(frozen=True)
class RoleSpec:
    """A parsed spec: the role's name and its options (``sia:backend=highs`` -> ``RoleSpec("sia", {"backend":
    "highs"})``)."""

    name: str
    options: Mapping[str, OptionValue] = field(default_factory=dict)

    def __str__(self) -> str:
        return ":".join([self.name, *(f"{k}={v}" for k, v in self.options.items())])


def parse_spec(text: str, field_name: str = "policy") -> RoleSpec:
    """Split ``name[:key=value]...``; segments without ``=`` form the name (``gavel:ftf``, ``mymod:MyPolicy``)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(field_name, text, "must be a non-empty name")
    names: list[str] = []
    opts: dict[str, OptionValue] = {}
    for seg in text.strip().split(":"):
        if "=" in seg:
            k, _, v = seg.partition("=")
            k = k.strip()
            if not k.isidentifier():
                raise InputError(f"{field_name}[{text}]", seg, "an option must look like key=value")
            if k in opts:
                raise InputError(f"{field_name}[{text}].{k}", v, "is given twice")
            opts[k] = _literal(v)
        elif opts:
            raise InputError(field_name, text, "options (key=value) must come after the name")
        elif not seg.strip():
            raise InputError(field_name, text, "has an empty segment")
        else:
            names.append(seg.strip())
    if not names:
        raise InputError(field_name, text, "names nothing before its options")
    return RoleSpec(":".join(names), opts)


def _annotation_text(p: inspect.Parameter) -> str:
    a = p.annotation
    if a is inspect.Parameter.empty:
        return ""
    return a if isinstance(a, str) else getattr(a, "__name__", str(a))


def _coerce(who: str, p: inspect.Parameter, value: object) -> object:
    """``value`` converted to ``p``'s annotated scalar type where the annotation names one (bool strictly)."""
    ann = _annotation_text(p).replace(" ", "")
    parts = set(ann.split("|")) if ann else set()
    if value is None:
        if parts and "None" not in parts and p.default is not None:
            raise InputError(who, value, f"must be a {ann}")
        return None
    if "bool" in parts and not (parts & {"int", "float", "str"}):
        return parse_bool(value, who)
    if "int" in parts and not (parts & {"float", "str"}):
        if isinstance(value, bool):
            raise InputError(who, value, "must be an integer")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                raise InputError(who, value, "must be an integer") from None
        if not isinstance(value, int):
            raise InputError(who, value, "must be an integer")
        return value
    if "float" in parts and "str" not in parts:
        if isinstance(value, bool):
            raise InputError(who, value, "must be a number")
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise InputError(who, value, "must be a number") from None
        if isinstance(value, (int, float)) and not math.isnan(value):
            return value
        raise InputError(who, value, "must be a number")
    if parts == {"str"} and not isinstance(value, str):
        return str(value)
    return value


@dataclass(frozen=True)
class RoleEntry:
    """A registered factory: a callable, or ``"module:attr"`` imported when first used (entry points, built-ins).
    ``defaults``: options passed unless the spec overrides them (``gavel:ftf`` is ``gavel`` with an objective)."""

    name: str
    target: Callable[..., object] | str
    defaults: Mapping[str, OptionValue] = field(default_factory=dict)
    description: str = ""
    group: str = ""  #: the entry-point group it came from ("" when registered in Python)

    def load(self) -> Callable[..., object]:
        if not isinstance(self.target, str):
            return self.target
        mod, _, attr = self.target.partition(":")
        try:
            obj = importlib.import_module(mod)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except Exception as exc:  # ImportError, AttributeError, or whatever the module raises at import
            if self.description.startswith("entry point "):  # an installed plug-in: named as one (issue 41)
                from ..plugins import PluginError

                raise PluginError(self.group or "schedopt.policies", self.name,
                                  f"the plug-in {self.name!r} ({self.description}) cannot be loaded: "
                                  f"{type(exc).__name__}: {exc}; fix or uninstall that package") from None
            raise InputError("policy", self.name, f"is not available in this installation ({exc})") from None
        if not callable(obj):
            raise InputError("policy", self.name, f"{self.target} is not callable")
        return obj

    def parameters(self) -> dict[str, inspect.Parameter]:
        """The factory's declared keyword parameters (empty when it takes ``**kwargs`` only)."""
        try:
            sig = inspect.signature(self.load())
        except (TypeError, ValueError):
            return {}
        return {k: p for k, p in sig.parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    def takes(self, name: str) -> bool:
        return name in self.parameters()

    def build(self, kind: str, options: Mapping[str, object], *, seed: int | None = None) -> object:
        """Call the factory with ``defaults`` | ``options`` (checked and converted), and ``seed`` if it takes one."""
        factory = self.load()
        params = self.parameters()
        try:
            sig = inspect.signature(factory)
            var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        except (TypeError, ValueError):
            var_kw = True
        merged: dict[str, object] = {**self.defaults, **options}
        kwargs: dict[str, object] = {}
        for k, v in merged.items():
            who = f"{kind}[{self.name}].{k}"
            if k in params:
                kwargs[k] = _coerce(who, params[k], v)
            elif var_kw:
                kwargs[k] = v
            else:
                close = difflib.get_close_matches(k, list(params), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                known = ", ".join(p for p in params if p != "seed") or "none"
                raise InputError(who, v, f"is not a parameter of {kind} {self.name} (it takes: {known}){hint}")
        if seed is not None and "seed" in params and "seed" not in merged:
            kwargs["seed"] = seed
        return factory(**kwargs)


class _Registry:
    """Names -> :class:`RoleEntry`, filled by built-ins, :func:`register_*` calls and an entry-point group (read
    once, on first use)."""

    def __init__(self, kind: str, group: str) -> None:
        self.kind, self.group = kind, group
        self.entries: dict[str, RoleEntry] = {}
        self._eps_loaded = False

    def _load_entry_points(self) -> None:
        if self._eps_loaded:
            return
        self._eps_loaded = True
        from ..plugins import distribution_of

        for ep in metadata.entry_points(group=self.group):
            self.entries.setdefault(ep.name, RoleEntry(ep.name, ep.value, group=self.group,
                                                       description=f"entry point {ep.value}{distribution_of(ep)}"))

    def add(self, entry: RoleEntry, replace: bool) -> None:
        if not isinstance(entry.name, str) or not entry.name or "=" in entry.name:
            raise InputError(f"{self.kind}.name", entry.name, "must be a non-empty name without '='")
        if entry.name in self.entries and not replace:
            raise InputError(f"{self.kind}.name", entry.name, "is registered already (pass replace=True)")
        self.entries[entry.name] = entry

    def names(self) -> list[str]:
        self._load_entry_points()
        return list(self.entries)

    def find(self, name: str) -> RoleEntry | None:
        self._load_entry_points()
        return self.entries.get(name)

    def resolve(self, name: str, field_name: str) -> RoleEntry:
        """A registered name, or ``module:Class`` / ``module.Class`` importable from the user's path."""
        entry = self.find(name)
        if entry is not None:
            return entry
        mod, sep, attr = name.rpartition(":") if ":" in name else name.rpartition(".")
        if sep and mod and attr:
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                raise InputError(field_name, name, f"names no registered {self.kind}, and its module cannot be "
                                                   f"imported ({exc})") from None
            return RoleEntry(name, f"{mod}:{attr}", description="user class")
        close = difflib.get_close_matches(name, self.names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InputError(field_name, name, f"unknown {self.kind}; have {', '.join(self.names())} or module:Class{hint}")


_POLICIES = _Registry("policy", "schedopt.policies")
_PLACERS = _Registry("placer", "schedopt.placers")
_ADMISSIONS = _Registry("admission", "schedopt.admissions")


def _register(reg: _Registry, name: str, factory: Callable[..., object] | str,
              defaults: Mapping[str, OptionValue] | None, description: str, replace: bool) -> None:
    reg.add(RoleEntry(name, factory, dict(defaults or {}), description), replace)


def register_policy(name: str, factory: Callable[..., object] | str, *, defaults: Mapping[str, OptionValue] | None = None,
                    description: str = "", replace: bool = False) -> None:
    """Make ``name`` a policy of the elastic engine (``schedopt simulate --policy name``, ``simulate_many``,
    Dask/Ray workers: a worker resolves the name again, so register it at import of a module the worker imports, or
    through the ``schedopt.policies`` entry-point group). ``factory``: a class or callable returning a fresh
    :class:`~schedopt.sim.policies.base.Policy`, or ``"module:attr"``. Its keyword parameters are the policy's
    options; ``defaults`` are applied unless a spec overrides them."""
    _register(_POLICIES, name, factory, defaults, description, replace)


def register_placer(name: str, factory: Callable[..., object] | str, *, defaults: Mapping[str, OptionValue] | None = None,
                    description: str = "", replace: bool = False) -> None:
    """Make ``name`` a placer (:class:`~schedopt.sim.roles.Placer`), like :func:`register_policy`."""
    _register(_PLACERS, name, factory, defaults, description, replace)


def register_admission(name: str, factory: Callable[..., object] | str, *,
                       defaults: Mapping[str, OptionValue] | None = None, description: str = "",
                       replace: bool = False) -> None:
    """Make ``name`` an admission rule (:class:`~schedopt.sim.roles.Admission`), like :func:`register_policy`."""
    _register(_ADMISSIONS, name, factory, defaults, description, replace)


def reload_entry_points() -> None:
    """Read the entry-point groups again (after a distribution was installed into the running process): entries
    that came from entry points are dropped and re-read; registered ones stay."""
    for reg in (_POLICIES, _PLACERS, _ADMISSIONS):
        for k in [k for k, e in reg.entries.items() if e.description.startswith("entry point ")]:
            del reg.entries[k]
        reg._eps_loaded = False


def snapshot() -> list[tuple[str, RoleEntry]]:
    """The entries registered in this process that a fresh process can rebuild (``"module:attr"`` targets and
    importable callables), for :func:`restore` in workers started by spawn, which do not inherit registrations."""
    import pickle

    out: list[tuple[str, RoleEntry]] = []
    for reg in (_POLICIES, _PLACERS, _ADMISSIONS):
        for e in reg.entries.values():
            try:
                pickle.dumps(e)
            except Exception:
                continue
            out.append((reg.kind, e))
    return out


def restore(entries: Sequence[tuple[str, RoleEntry]]) -> None:
    """Register ``entries`` (from :func:`snapshot`) here, replacing what is there."""
    regs = {r.kind: r for r in (_POLICIES, _PLACERS, _ADMISSIONS)}
    for kind, e in entries:
        regs[kind].add(e, replace=True)


def policies() -> list[str]:
    """The registered policy names of the elastic engine (built-in, registered, installed entry points).

    Examples
    --------
    >>> from schedopt import sim
    >>> sim.policies()[:4]
    ['fifo', 'tiresias', 'sia', 'sia:published']
    """
    return _POLICIES.names()


def placers() -> list[str]:
    """The registered placers' names."""
    return _PLACERS.names()


def admissions() -> list[str]:
    """The registered admission rules' names."""
    return _ADMISSIONS.names()


def policy_entry(name: str) -> RoleEntry:
    """The entry behind a policy name (``module:Class`` included)."""
    return _POLICIES.resolve(parse_spec(name).name, "policy")


def _make(reg: _Registry, spec: object, field_name: str, params: Mapping[str, object] | None, seed: int | None,
          check: Callable[[object], bool], needs: str) -> object:
    if not isinstance(spec, str):
        if isinstance(spec, type):  # FifoPolicy for FifoPolicy(): decide() would be called unbound
            raise InputError(field_name, spec.__name__, f"is a class: pass an instance ({spec.__name__}()) or a "
                                                        f"{reg.kind} name")
        if params:
            raise InputError(f"{field_name}_params", dict(params), f"apply to a {reg.kind} given by name only")
        if not check(spec):
            raise InputError(field_name, type(spec).__name__, f"must be a {reg.kind} name or an object with {needs}")
        return copy.deepcopy(spec)  # a fresh one per simulation: policies keep state between rounds
    rs = parse_spec(spec, field_name)
    entry = reg.resolve(rs.name, field_name)
    dup = sorted(set(rs.options) & set(params or {}))
    if dup:
        raise InputError(f"{field_name}[{spec}].{dup[0]}", (params or {})[dup[0]], "is given twice (spec and params)")
    obj = entry.build(reg.kind, {**rs.options, **dict(params or {})}, seed=seed)
    if not check(obj):
        raise InputError(field_name, spec, f"{entry.target} made a {type(obj).__name__}, which has no {needs}")
    return obj


def make(kind: str, spec: object, params: Mapping[str, object] | None = None, *, seed: int | None = None,
         check: Callable[[object], bool], needs: str) -> object:
    """A fresh role object of ``kind`` (``"policy"``, ``"placer"``, ``"admission"``) from a spec (checked against
    the factory's parameters, with ``params`` as more options and ``seed`` for factories that take one) or a copy
    of an object; ``check`` says whether the result has the role's method (``needs`` names it in the error).
    :func:`schedopt.sim.policies.make_policy` and :func:`schedopt.sim.roles.make_placer` / ``make_admission`` type it."""
    regs = {r.kind: r for r in (_POLICIES, _PLACERS, _ADMISSIONS)}
    if kind not in regs:
        raise InputError("kind", kind, f"must be one of {list(regs)}")
    return _make(regs[kind], spec, kind, params, seed, check, needs)


def role_name(obj: object, spec: object) -> str:
    """The name a record gives a role: the spec text, else the object's ``name``, else its class name."""
    return spec if isinstance(spec, str) else str(getattr(obj, "name", type(obj).__name__))
