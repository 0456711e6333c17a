"""One executor layer for everything that runs independent pieces of work at once (POP's sub-problems, benchmark
runs, simulator sweeps).

:func:`map_unordered` / :func:`map_ordered` run ``fn(item)`` for every item on any of:

* ``None``: in this process, one after the other (closures welcome);
* a :class:`concurrent.futures.Executor` (``ThreadPoolExecutor``, ``ProcessPoolExecutor``, ...);
* a Dask :class:`distributed.Client` (its ``submit`` / ``as_completed``; ``pure=False``, so repeated items run again);
* a pool with ``imap_unordered`` / ``apply_async``: Ray's :class:`ray.util.multiprocessing.Pool` and the standard
  :class:`multiprocessing.pool.Pool`;
* anything else with ``submit(fn, *args)`` returning objects with ``result()``.

:func:`open_executor` turns a spec string into one (and owns what it creates, closing it on exit): ``serial``,
``threads[:N]``, ``processes[:N]``, ``dask`` (a local ``LocalCluster`` of N single-threaded workers),
``dask://HOST:PORT`` (or ``tcp://HOST:PORT``: a running scheduler), ``ray`` (a local Ray pool of N processes) or
``ray://HOST:PORT`` (a Ray cluster). Functions sent to processes or other machines must be picklable; closures are
sent with ``cloudpickle`` where it is installed (Dask and Ray install it).

On ``KeyboardInterrupt`` the work not yet started is cancelled before the interrupt propagates.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from .errors import InputError

__all__ = [
    "EXECUTOR_SPECS",
    "describe",
    "kind_of",
    "map_ordered",
    "map_unordered",
    "open_executor",
    "spec_from_flags",
    "validate_spec",
]

T = TypeVar("T")
R = TypeVar("R")

#: the spec strings :func:`open_executor` accepts (``:N`` sets the worker count where it applies)
EXECUTOR_SPECS = ("serial", "threads[:N]", "processes[:N]", "dask[:N]", "dask://HOST:PORT", "tcp://HOST:PORT",
                  "ray[:N]", "ray://HOST:PORT")


def kind_of(executor: Any) -> str:
    """``"serial"``, ``"futures"``, ``"dask"``, ``"pool"``, ``"submit"`` or ``"map"`` (an object with only an
    ordered ``map(fn, items)``): how :func:`map_unordered` drives it."""
    if executor is None:
        return "serial"
    mod = type(executor).__module__ or ""
    if mod.startswith("distributed") and hasattr(executor, "submit") and hasattr(executor, "gather"):
        return "dask"
    if isinstance(executor, cf.Executor):
        return "futures"
    if hasattr(executor, "imap_unordered") or hasattr(executor, "apply_async"):
        return "pool"
    if hasattr(executor, "submit"):
        return "submit"
    if hasattr(executor, "map"):
        return "map"
    raise InputError("executor", type(executor).__name__,
                     "must be None, a concurrent.futures executor, a Dask Client, a Ray/multiprocessing pool, or "
                     "have submit() or map()")


def describe(executor: Any) -> str:
    """A short description for logs and records: ``threads``, ``dask(tcp://127.0.0.1:8786)``, ..."""
    k = kind_of(executor)
    if k == "serial":
        return "serial"
    if k == "dask":
        return f"dask({getattr(executor.scheduler, 'address', '?') if getattr(executor, 'scheduler', None) else '?'})"
    if isinstance(executor, cf.ThreadPoolExecutor):
        return "threads"
    if isinstance(executor, cf.ProcessPoolExecutor):
        return "processes"
    return f"{k}({type(executor).__module__}.{type(executor).__name__})"


class _Indexed:
    """``(i, item) -> (i, fn(item))``: keeps the index through pools that return results unordered."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, pair: tuple[int, Any]) -> tuple[int, Any]:
        i, item = pair
        return i, self.fn(item)


class _Cloudpickled:
    """A callable shipped with cloudpickle (closures, lambdas, functions of ``__main__``), unpickled on first use."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        import cloudpickle

        self.blob = cloudpickle.dumps(fn)
        self._fn: Callable[[Any], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"blob": self.blob, "_fn": None}

    def __call__(self, *args: Any) -> Any:
        if self._fn is None:
            self._fn = pickle.loads(self.blob)
        return self._fn(*args)


def _portable(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` if plain pickle can send it, else wrapped for cloudpickle (when installed)."""
    try:
        pickle.dumps(fn)
        return fn
    except Exception:
        try:
            return _Cloudpickled(fn)
        except ImportError:
            raise InputError("fn", getattr(fn, "__qualname__", repr(fn)),
                             "cannot be sent to other processes (not picklable; pip install cloudpickle, or use a "
                             "module-level function, or a thread pool)") from None


def map_unordered(fn: Callable[[T], R], items: Iterable[T], executor: Any = None) -> Iterator[tuple[int, R]]:
    """Yield ``(index, fn(item))`` as each finishes (in order when ``executor`` is None). An exception raised by
    ``fn`` propagates from the iteration; interrupting it cancels the work not yet started."""
    work = list(items)
    kind = kind_of(executor)
    if kind == "serial":
        for i, item in enumerate(work):
            yield i, fn(item)
        return
    if kind == "pool":
        yield from _pool(fn, work, executor)
        return
    if kind == "dask":
        yield from _dask(fn, work, executor)
        return
    if kind == "map":
        yield from enumerate(executor.map(_portable(fn), work))
        return
    send = fn if isinstance(executor, cf.ThreadPoolExecutor) else _portable(fn)
    futures = {executor.submit(send, item): i for i, item in enumerate(work)}
    try:
        if all(isinstance(f, cf.Future) for f in futures):
            for f in cf.as_completed(futures):
                yield futures[f], f.result()
        else:  # another engine's futures: collect them in order
            for f, i in futures.items():
                yield i, f.result()
    except BaseException:
        for f in futures:
            with contextlib.suppress(Exception):
                f.cancel()
        raise


def _dask(fn: Callable[[Any], Any], work: Sequence[Any], client: Any) -> Iterator[tuple[int, Any]]:
    from distributed import as_completed

    futures = [client.submit(fn, item, pure=False) for item in work]
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for f in as_completed(futures):
            yield index[f.key], f.result()
    except BaseException:
        with contextlib.suppress(Exception):
            client.cancel(futures)
        raise


def _pool(fn: Callable[[Any], Any], work: Sequence[Any], pool: Any) -> Iterator[tuple[int, Any]]:
    call = _Indexed(_portable(fn))
    if hasattr(pool, "imap_unordered"):
        yield from pool.imap_unordered(call, list(enumerate(work)))
        return
    pending = [pool.apply_async(call, (pair,)) for pair in enumerate(work)]
    for r in pending:
        yield r.get()


def map_ordered(fn: Callable[[T], R], items: Iterable[T], executor: Any = None) -> list[R]:
    """``[fn(item) for item in items]`` on ``executor`` (see :func:`map_unordered`), in the items' order."""
    work = list(items)
    out: list[Any] = [None] * len(work)
    for i, r in map_unordered(fn, work, executor):
        out[i] = r
    return out


def _count(spec: str, default: int) -> int:
    head, _, n = spec.partition(":")
    if not n:
        return default
    try:
        k = int(n)
    except ValueError:
        raise InputError("executor", spec, f"the worker count after '{head}:' must be an integer") from None
    if k < 1:
        raise InputError("executor", spec, "the worker count must be >= 1")
    return k


def spec_from_flags(executor: str | None, dask: str | None = None, ray: bool = False) -> str | None:
    """The executor spec a command line's ``--executor SPEC`` / ``--dask [HOST:PORT]`` / ``--ray`` flags ask for
    (``--dask`` with no address is ``"local"``: a local Dask cluster), validated; None when none is given. Giving
    more than one is an :class:`~schedopt.errors.InputError` naming ``--executor``; a bad spec or address is one
    naming the flag it came from (``--dask host:notaport``: ``--dask``)."""
    chosen = [x for x in (executor, dask, "ray" if ray else None) if x is not None]
    if len(chosen) > 1:
        raise InputError("--executor", chosen, "give one of --executor, --dask and --ray")
    spec = chosen[0] if chosen else None
    flag = "--executor"
    if dask is not None:
        flag = "--dask"
        spec = "dask" if dask == "local" else (dask if "://" in dask else f"dask://{dask}")
    if spec is not None:
        try:
            validate_spec(spec)
        except InputError as exc:
            raise InputError(flag, dask if dask is not None else exc.value, exc.message) from None
    return spec


def _address(spec: str, port_required: bool) -> tuple[str, int | None]:
    """``(host, port)`` of ``scheme://HOST[:PORT]`` (IPv6 hosts in brackets: ``[::1]:8786``); InputError
    (field ``executor``) for an address no client could connect to."""
    rest = spec.split("://", 1)[1]
    if not rest or "/" in rest or any(c.isspace() for c in rest):
        raise InputError("executor", spec, "must be SCHEME://HOST:PORT (e.g. dask://10.0.0.1:8786)")
    if rest.startswith("["):
        host, close, tail = rest[1:].partition("]")
        if not close or not host or (tail and not tail.startswith(":")):
            raise InputError("executor", spec, "an IPv6 host must be in brackets: [::1]:8786")
        port_text = tail[1:] if tail else None
    else:
        host, colon, port_text_ = rest.partition(":")
        port_text = port_text_ if colon else None
        if ":" in (port_text or ""):
            raise InputError("executor", spec, "has more than one ':' (an IPv6 host must be in brackets: [::1]:8786)")
        if not host:
            raise InputError("executor", spec, "names no host")
    if port_text is None:
        if port_required:
            raise InputError("executor", spec, "names no port (HOST:PORT, e.g. 127.0.0.1:8786)")
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InputError("executor", spec, f"the port {port_text!r} must be an integer in 1..65535")
    return host, int(port_text)


def validate_spec(spec: str) -> None:
    """Raise :class:`~schedopt.errors.InputError` (field ``executor``) unless ``spec`` is a spec string
    :func:`open_executor` accepts (an address parsed: ``HOST:PORT``, the port in 1..65535); opens nothing."""
    if not isinstance(spec, str):
        raise InputError("executor", spec, f"must be one of {', '.join(EXECUTOR_SPECS)}")
    low = spec.strip().lower()
    for head in ("serial", "threads", "processes", "dask", "ray"):
        if low == head or (head != "serial" and low.startswith(head + ":") and not low.startswith(head + "://")):
            if low != head:
                _count(low, 1)
            return
    if low.startswith(("dask://", "tcp://", "ray://")):
        _address(spec.strip(), port_required=not low.startswith("ray://"))
        return
    raise InputError("executor", spec, f"must be one of {', '.join(EXECUTOR_SPECS)}")


@contextlib.contextmanager
def open_executor(spec: Any, workers: int | None = None) -> Iterator[Any]:
    """An executor for ``spec`` (a spec string, see :data:`EXECUTOR_SPECS`; or an executor object, passed through and
    not closed), closed on exit when this function created it. ``workers`` is the default worker count (default:
    the CPU count)."""
    if spec is None or not isinstance(spec, str):
        kind_of(spec)  # validates an object
        yield spec
        return
    validate_spec(spec)
    n_default = workers if workers is not None else (os.cpu_count() or 1)
    s = spec.strip()
    low = s.lower()
    if low == "serial":
        yield None
    elif low == "threads" or low.startswith("threads:"):
        with cf.ThreadPoolExecutor(max_workers=_count(s, n_default)) as pool:
            yield pool
    elif low == "processes" or low.startswith("processes:"):
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(max_workers=_count(s, n_default), mp_context=mp.get_context("spawn")) as procs:
            yield procs
    elif low.startswith(("dask://", "tcp://")):
        client = _dask_client(s.replace("dask://", "tcp://", 1))
        try:
            yield client
        finally:
            client.close()
    elif low == "dask" or low.startswith("dask:"):
        distributed = _need("distributed", "dask[distributed]")
        cluster = distributed.LocalCluster(n_workers=_count(s, n_default), threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
    elif low == "ray" or low.startswith(("ray:", "ray://")):
        ray = _need("ray", "ray")
        from ray.util.multiprocessing import Pool

        address = s if low.startswith("ray://") else None
        started = not ray.is_initialized()
        if started:  # workers import what this process imports (its sys.path, as the bench's run processes do)
            env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            # "ray[:N]" is a local Ray of our own: address="local", or ray.init would join any Ray cluster already
            # running on the machine (another user's, whose workers may not import schedopt)
            ray.init(address=address or "local", include_dashboard=False, log_to_driver=False,
                     runtime_env=None if address else {"env_vars": env})
        rpool: Any = Pool(processes=None if address else _count(s, n_default))
        try:
            yield rpool
        finally:
            rpool.terminate()
            if started:
                ray.shutdown()
    else:
        raise InputError("executor", spec, f"must be one of {', '.join(EXECUTOR_SPECS)}")


def _need(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError("executor", module, f"needs the Python package {module!r} (pip install '{extra}')") from None


def _dask_client(address: str) -> Any:
    """A Dask client of the scheduler at ``address`` (``tcp://HOST:PORT``). The address is parsed and a TCP
    connection tried first (2 s), so a typo or a closed port is a named error at once, not Dask's retries."""
    import socket

    host, port = _address(address, port_required=True)
    distributed = _need("distributed", "dask[distributed]")
    try:
        socket.create_connection((host, port), timeout=2.0).close()
    except OSError as exc:
        raise InputError("executor", address, f"no Dask scheduler answers there: {exc.strerror or exc}") from None
    try:
        return distributed.Client(address, timeout="10s")
    except (OSError, ValueError) as exc:
        raise InputError("executor", address, f"no Dask scheduler answers there: {exc}") from None
