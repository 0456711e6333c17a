"""The service's metrics in the Prometheus text exposition format (version 0.0.4): counters, gauges and one
histogram, kept in plain dicts (the service has one process and one event loop: no lock is needed)."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["CONTENT_TYPE", "Histogram", "Metrics"]

#: The Prometheus text exposition format's content type.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: decision latency buckets (seconds): a Sia round at 2,048 GPUs is tens of milliseconds, a large MILP seconds
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return "{" + body + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


@dataclass
class Histogram:
    buckets: tuple[float, ...] = LATENCY_BUCKETS
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.buckets)

    def observe(self, v: float) -> None:
        self.n += 1
        self.total += v
        for i, b in enumerate(self.buckets):
            if v <= b:
                self.counts[i] += 1

    def lines(self, name: str) -> Iterable[str]:
        for b, c in zip(self.buckets, self.counts):
            yield f'{name}_bucket{{le="{_num(b)}"}} {c}'
        yield f'{name}_bucket{{le="+Inf"}} {self.n}'
        yield f"{name}_sum {_num(self.total)}"
        yield f"{name}_count {self.n}"


@dataclass
class Metrics:
    """What ``GET /metrics`` reports. Counters only grow; gauges are read from the session when asked."""

    requests: defaultdict[tuple[str, str, int], int] = field(default_factory=lambda: defaultdict(int))
    errors: defaultdict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    decisions: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    events: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    latency: Histogram = field(default_factory=Histogram)
    save_latency: Histogram = field(default_factory=Histogram)
    journal_latency: Histogram = field(default_factory=Histogram)

    def request(self, route: str, method: str, status: int) -> None:
        self.requests[(route, method, status)] += 1

    def error(self, kind: str, status: int) -> None:
        self.errors[(kind, status)] += 1

    def render(self, gauges: Mapping[str, tuple[str, Mapping[tuple[tuple[str, str], ...], float]]]) -> str:
        """The exposition text; ``gauges``: name -> (help, {label pairs: value}) read from the session."""
        out: list[str] = []

        def family(name: str, kind: str, help_: str, samples: Iterable[str]) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)

        family("schedopt_decision_seconds", "histogram",
               "Wall time of a decision computed by the session (repeats and deadline answers excluded).",
               self.latency.lines("schedopt_decision_seconds"))
        family("schedopt_decisions_total", "counter", "Decisions answered, by status.",
               (f"schedopt_decisions_total{_labels({'status': s})} {c}" for s, c in sorted(self.decisions.items())))
        family("schedopt_events_total", "counter", "Events applied to the session, by kind.",
               (f"schedopt_events_total{_labels({'kind': k})} {c}" for k, c in sorted(self.events.items())))
        family("schedopt_requests_total", "counter", "HTTP requests answered, by route, method and status code.",
               (f"schedopt_requests_total{_labels({'route': r, 'method': m, 'code': str(s)})} {c}"
                for (r, m, s), c in sorted(self.requests.items())))
        family("schedopt_errors_total", "counter", "Requests refused, by kind of error and status code.",
               (f"schedopt_errors_total{_labels({'kind': k, 'code': str(s)})} {c}"
                for (k, s), c in sorted(self.errors.items())))
        family("schedopt_state_save_seconds", "histogram", "Wall time of writing the state file (atomic replace).",
               self.save_latency.lines("schedopt_state_save_seconds"))
        family("schedopt_journal_append_seconds", "histogram",
               "Wall time of appending one change to the journal and syncing it (before the change is answered).",
               self.journal_latency.lines("schedopt_journal_append_seconds"))
        family("process_cpu_seconds_total", "counter", "User and system CPU time of the service's process.",
               (f"process_cpu_seconds_total {_num(time.process_time())}",))
        for name, (help_, samples) in gauges.items():
            family(name, "gauge", help_,
                   (f"{name}{_labels(dict(labels))} {_num(v)}" for labels, v in sorted(samples.items())))
        return "\n".join(out) + "\n"
