"""Sphinx configuration of the schedopt documentation.

Build (from the repository root; warnings are errors and every cross-reference must resolve)::

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html

Generated at build time, never committed (``.gitignore``): ``docs/api/`` (the API reference, from every package's
``__all__``: ``_ext/apipages.py``), ``docs/gallery/`` (sphinx-gallery, from ``docs/examples/``), ``docs/generated/``
(the command line, the JSON schemas and the benchmark pages: ``_ext/generate.py``).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))  # the build's own helpers (not the package: that is imported as installed)

import apipages  # noqa: E402
import generate  # noqa: E402

import schedopt  # noqa: E402

project = "schedopt"
author = "schedopt developers"
copyright = "schedopt developers, Apache-2.0"
release = schedopt.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
]

root_doc = "index"
exclude_patterns = ["_build", "examples/README.rst", "**/.ipynb_checkpoints", "_ext", "_templates"]
templates_path = ["_templates"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}

html_theme = "pydata_sphinx_theme"
html_title = f"schedopt {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path: list[str] = []

# -- MyST: the guides, the formulation cards and the pages other parts of the project write ----------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = [
    # an annotation that stays a string (a name imported under TYPE_CHECKING) is looked up by its short name; where
    # two packages define it (ClusterState, Job) Sphinx links the nearest and says so: not an error
    "ref.python",
    # the formulation cards link each other and the code by repository path (formulations/x.md, ../schedopt/...):
    # those links are right on GitHub and in an editor; on the site they stay plain text
    "myst.xref_missing",
]

# -- API reference -----------------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "signature"
# defaults as written in the source (a default that is a long table, e.g. the fuzz cases, is its name, not its repr)
autodoc_preserve_defaults = True
autodoc_member_order = "bysource"
autodoc_class_signature = "separated"
numpydoc_show_class_members = False  # autodoc's :members: lists them (templates/autosummary/class.rst)
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()
add_module_names = False
python_maximum_signature_line_length = 100

_ITEMS = apipages.public_names()
ALIASES = apipages.aliases(_ITEMS)
SHORT: dict[str, list[str]] = {}
for _name in sorted(set(ALIASES.values())):
    SHORT.setdefault(_name.rsplit(".", 1)[-1], []).append(_name)

# nitpicky (-n) makes every unresolved cross-reference an error. Without network there is no intersphinx: the types
# of numpy, scipy, pandas, pyomo, linopy, dask, ray, the standard library and typing's special forms cannot be
# linked, and are listed here (by pattern) instead. A schedopt name is never ignored: it must be public (in some
# package's __all__) or the build fails.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|sp|pandas|pd|pyomo|linopy|xarray|dask|distributed|ray|networkx|nx|highspy|ortools|"
               r"matplotlib|hypothesis|yaml|concurrent|multiprocessing|threading|collections|typing|typing_extensions|"
               r"types|pathlib|os|io|argparse|enum|dataclasses|datetime|logging|random|subprocess|abc|contextlib|"
               r"functools|json|csv|_io|_thread|weakref|socket|signal|queue|numbers|re|inspect|importlib)\..*"),
    # names the signatures show that are deliberately not public: a TypeVar of the problem contract, the cvxpy
    # baseline's return type
    (r"py:class", r"schedopt\.problem\.(Inv|Generator)|schedopt\.bench\.baselines\.CvxpySia"),
    (r"py:.*", r"(NDArray|ArrayLike|DTypeLike|Path|PathLike|Callable|Iterable|Iterator|Mapping|Sequence|Hashable|"
               r"Collection|MutableMapping|Generator|Awaitable|Any|Self|TypeAlias|Literal|Protocol|Enum|IntEnum|"
               r"StrEnum|Executor|Future|TextIO|BinaryIO|IO|Generic|T|K|V|P|R|Inv|TypeVar|ParamSpec|Never|NoReturn|"
               r"ndarray|spmatrix|sparray|csr_matrix|csr_array|coo_matrix|ConcreteModel|DataFrame|Series|Client|"
               r"Figure|Axes|SearchStrategy|DrawFn|Popen|Logger|Thread|Event|Lock|Counter|Random|Generator)"),
    # builtins (no intersphinx to link them to the Python docs)
    (r"py:.*", r"(None|str|int|float|bool|bytes|complex|object|type|tuple|list|dict|set|frozenset|range|slice|"
               r"Exception|BaseException|ValueError|TypeError|KeyError|RuntimeError|OSError|KeyboardInterrupt|"
               r"TimeoutError|LookupError|ArithmeticError|NotImplementedError|Ellipsis|memoryview|bytearray|"
               r"property|classmethod|staticmethod|BaseExceptionGroup|ExceptionGroup|Warning|UserWarning|"
               r"RuntimeWarning|DeprecationWarning|FileNotFoundError|PermissionError|IndexError|AttributeError|"
               r"ImportError|ModuleNotFoundError|SystemExit|EOFError|ConnectionError|StopIteration|\.\.\.)"),
    # private names (a leading underscore) are not documented; a docstring that names one shows it as plain text
    (r"py:.*", r"(.*\.)?_[A-Za-z_].*"),
    # type variables (T, R, K, V)
    (r"py:.*", r"(schedopt\..*\.)?[A-Z]"),
    (r"py:.*", r"(optional|callable|array-like|array_like|default|sequence|mapping|iterable|positive|int or None)"),
]


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x != y:
            break
        n += 1
    return n


def _resolve_alias(app, env, node, contnode):  # type: ignore[no-untyped-def]
    """A reference to a public object under another path (its defining module, another package that re-exports
    it) goes to the page that documents it."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target:
        return None
    candidates = [target]
    mod = node.get("py:module")
    if mod and not target.startswith("schedopt"):
        candidates.insert(0, f"{mod}.{target}")
        cls = node.get("py:class")
        if cls:
            candidates.insert(0, f"{mod}.{cls}.{target}")
    head, dot, attr = target.partition(".")
    if not target.startswith("schedopt"):
        # a short name (``InputError``, ``SimResult.to_jsonl``): the public object of that name, the one nearest the
        # referring module where several packages define one
        near = sorted(SHORT.get(head, []), key=lambda full: -_common(full, mod or ""))
        candidates.extend(f"{full}{dot}{attr}" for full in near)
    domain = env.get_domain("py")
    if mod and "." not in target and node.get("reftype") in ("meth", "attr", "obj"):
        # a method named from a module's docstring or a summary line (``:meth:`put```): the one method of that name
        # documented on a class of the referring module
        found = [name for name in domain.objects if name.startswith(mod + ".") and name.endswith("." + target)
                 and name.count(".") == mod.count(".") + 2]
        if len(found) == 1:
            candidates.append(found[0])
    for cand in candidates:
        to = ALIASES.get(cand)
        if to is None:
            head, _, attr = cand.rpartition(".")
            base = ALIASES.get(head)
            to = f"{base}.{attr}" if base and attr else None
        if to is None:
            to = cand if cand != target else None
        if to is None:
            continue
        node["reftarget"] = to
        ref = domain.resolve_xref(env, node["refdoc"], app.builder, node.get("reftype", "obj"), to, node, contnode)
        if ref is not None:
            return ref
    node["reftarget"] = target
    return None


sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "gallery",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "min_reported_time": 1,
    "abort_on_example_error": True,
}


# written when this file loads, before autosummary reads the pages (its builder-inited handler runs first)
apipages.write_pages(HERE / "api")
generate.write_all(HERE / "generated", HERE.parent)


def _signature(app, what, name, obj, options, signature, return_annotation):  # type: ignore[no-untyped-def]
    """A dataclass field's ``default_factory`` shows as ``<factory>``, which is not Python: the signature would not
    parse (and every comma in it would become a broken link); show it as ``...``."""
    if signature and "<factory>" in signature:
        signature = signature.replace("<factory>", "...")
    return signature, return_annotation


class _OptionalFolders(logging.Filter):
    """docs/platform/ and docs/scale/ are written by the parts of the project they describe; the platform guide
    includes them by glob, and the site builds whether or not they exist yet. Sphinx says when a glob matches
    nothing without a warning type that ``suppress_warnings`` could name, so this drops that one message for
    those two folders (and no other)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not ("didn't match any documents" in str(record.msg)
                    and any(str(a) in ("../platform/*", "../scale/*") for a in (record.args or ())))


logging.getLogger("sphinx.sphinx.directives.other").addFilter(_OptionalFolders())


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("autodoc-process-signature", _signature)
    app.connect("missing-reference", _resolve_alias)
    return {"parallel_read_safe": True}

