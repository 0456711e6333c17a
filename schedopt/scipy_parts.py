"""One compiled module of scipy, loaded from its file without the ``__init__.py`` of its subpackage (issue 42).

``import scipy.optimize`` runs ``scipy/optimize/__init__.py``, which loads the linear programming, the global
optimizers, ``scipy.linalg`` and more (about 0.2-0.3 s of CPU); ``scipy.interpolate`` imports ``scipy.optimize``.
The simulator's everyday run needs one routine of each: the L-BFGS-B routine of the throughput fit
(``scipy.optimize._lbfgsb``) and the measured job model's ``LinearNDInterpolator``
(``scipy.interpolate._interpnd``). :func:`load_extension` loads such a compiled module from the file scipy
installed, so the code that runs is scipy's own. Callers fall back to the normal import on any problem.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

__all__ = ["load_extension"]


def load_extension(subpackage: str, name: str, skip_init: Sequence[str] = ()) -> ModuleType:
    """The compiled module ``scipy.<subpackage>.<name>``.

    Parameters
    ----------
    subpackage : str
        scipy's subpackage folder, e.g. ``"optimize"``.
    name : str
        The extension's module name, e.g. ``"_lbfgsb"``.
    skip_init : sequence of str
        Other subpackages whose compiled modules the extension imports as it loads (``_interpnd`` imports
        ``scipy.spatial._qhull``, which imports ``scipy.linalg.cython_lapack``): while it loads, each of them that
        is not imported yet stands in ``sys.modules`` as a bare package of scipy's folder, so that its
        ``__init__.py`` does not run (``scipy.spatial``'s imports ``scipy.linalg``, ``scipy.special`` and more:
        about 0.1 s of CPU). Afterwards the bare packages and the modules loaded under them are taken out of
        ``sys.modules`` again, so that a later ``import scipy.spatial`` runs as usual (a Cython module imported
        again is the same module object). Only in a process with one thread (another thread could import the
        bare package meanwhile); otherwise the packages are imported as usual.

    Returns
    -------
    types.ModuleType
        The module: the one ``sys.modules`` holds when ``scipy.<subpackage>`` is imported already, else the
        extension loaded from its file in scipy's folder without running ``scipy/<subpackage>/__init__.py`` (and
        not left in ``sys.modules``, so that a later ``import scipy.<subpackage>`` loads it as usual).

    Raises
    ------
    ImportError
        scipy or the extension's file is not found, or it does not load.
    """
    full = f"scipy.{subpackage}.{name}"
    if f"scipy.{subpackage}" in sys.modules or full in sys.modules:
        return importlib.import_module(full)
    spec = importlib.util.find_spec("scipy")
    if spec is None or spec.origin is None:
        raise ImportError("scipy not found")
    folder = os.path.join(os.path.dirname(spec.origin), subpackage)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, name + suffix)
        if os.path.isfile(path):
            break
    else:
        raise ImportError(f"no compiled {name} in {folder}")
    ext = importlib.util.spec_from_file_location(full, path)
    if ext is None or ext.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(ext)
    bare = _bare_packages(os.path.dirname(folder), skip_init) if threading.active_count() == 1 else {}
    before = set(sys.modules) if bare else set()
    try:
        ext.loader.exec_module(module)
    finally:
        # a single-phase extension registers itself in sys.modules; without its package there, a later import of
        # the package would reuse it without setting the package's attribute: take it out, so that the import
        # loads it as usual (the same compiled code)
        if sys.modules.get(full) is module:
            del sys.modules[full]
        for pkg in bare:  # the bare packages, and what loaded under them, likewise
            for mod in [m for m in sys.modules if m not in before and m.startswith(pkg + ".")]:
                del sys.modules[mod]
            if sys.modules.get(pkg) is bare[pkg]:
                del sys.modules[pkg]
    return module


def _bare_packages(root: str, subpackages: Sequence[str]) -> dict[str, ModuleType]:
    """For each of scipy's ``subpackages`` not imported yet, an empty package of its folder in ``root``, put in
    ``sys.modules`` (see :func:`load_extension`'s ``skip_init``)."""
    out = {}
    for sub in subpackages:
        full = f"scipy.{sub}"
        if full in sys.modules or not os.path.isdir(os.path.join(root, sub)):
            continue
        pkg = ModuleType(full)
        pkg.__path__ = [os.path.join(root, sub)]
        pkg.__package__ = full
        out[full] = sys.modules[full] = pkg
    return out
