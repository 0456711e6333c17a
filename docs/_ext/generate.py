"""Pages written at build time from the repository's own files (run by ``docs/conf.py``; nothing here imports
Sphinx): the formulation cards (included, not copied), the JSON schemas, the exit codes, and the benchmark and
fidelity pages made from the records in ``benchmarks/``. Everything goes to ``docs/generated/`` (git-ignored).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from pathlib import Path

#: record file -> (page, title, the command that writes it). A record not listed here still gets a table, on the
#: page named by its prefix, with "the command is not recorded" (so a new record never goes missing).
RECORDS: dict[str, tuple[str, str, str]] = {
    "sia_64-2048.csv": ("benchmarks", "Sia's configuration ILP, 64-2,048 GPUs, every backend",
                        "schedopt bench --problem sia --sizes 64,128,256,512,1024,2048 --loads normal,heavy "
                        "--backends mckp,highs,glpk,scipy,pyomo,cvxpy-glpk,cpsat --repeat 3 --time-limit 30 "
                        "--guard 90 -o results.csv"),
    "sia_4096-16384.csv": ("benchmarks", "Sia's configuration ILP, 4,096-16,384 GPUs",
                           "schedopt bench --problem sia --sizes 4096,8192,16384 --loads normal,heavy "
                           "--backends mckp,highs,glpk --time-limit 60 --guard 150 -o results.csv"),
    "mckp_ties.csv": ("benchmarks", "mckp against HiGHS on tied instances and simulator snapshots",
                      "python tools/bench_mckp_ties.py --sizes 64,256,1024,2048 --seeds 0,1,2 "
                      "--snapshots /tmp/sia2048_snapshots.pkl --repeat 3 --label L --out benchmarks/mckp_ties.csv"),
    "bench_overhead_cold.csv": ("benchmarks", "A benchmark run's fixed cost, cold",
                                "python tools/bench_overhead.py --cold 7 --tree before=/tmp/before --tree after=. "
                                "-o benchmarks/bench_overhead_cold.csv"),
    "trace_read.csv": ("benchmarks", "Reading the public traces", "python tools/bench_trace_read.py"),
    "sim_speed.csv": ("benchmarks", "Simulation speed per cluster size", "python tools/sim_targets.py"),
    "sim_speed_bootstrap.csv": ("benchmarks", "Simulation speed with the bootstrap estimator",
                                "python tools/sim_targets.py"),
    "sim_speed_profile.csv": ("benchmarks", "Simulation time per phase",
                              "python tools/profile_sim.py --policy sia --workload W --cluster C "
                              "--csv benchmarks/sim_speed_profile.csv --label L"),
    "sim_policy_times.csv": ("benchmarks", "Each policy's whole simulation",
                             "python tools/sim_policy_times.py --policies sia,pollux,pollux-unaware,gavel,gavel:ftf,"
                             "tiresias,fifo --runs saturn/1@sia-64 --runs saturn-32x/1@sia-2048 --label L"),
    "pollux_speed.csv": ("benchmarks", "Pollux's policy path",
                         "python tools/sim_policy_times.py --policies pollux --label V; python tools/profile_sim.py "
                         "--policy pollux --workload saturn/1 --cluster sia-64 --max-time 6000"),
    "sia_target.csv": ("benchmarks", "The sia policy on saturn/1", "python tools/bench_sia_target.py"),
    "mckp_rounds.csv": ("benchmarks", "mckp on the everyday run's rounds, before and after, interleaved",
                        "python tools/bench_mckp_rounds.py capture /tmp/rounds.pkl; PYTHONPATH=$PWD python "
                        "tools/bench_mckp_rounds.py interleave /tmp/rounds.pkl --before /tmp/before --repeat 5 "
                        "--label sia-measured --out benchmarks/mckp_rounds.csv"),
    "sim_synergy_speed.csv": ("benchmarks", "Synergy's closed loop, speed", "python tools/sim_synergy_loop.py"),
    "sim_pollux.csv": ("fidelity", "Pollux (OSDI'21): the published simulator's workloads",
                       "python tools/sim_targets.py"),
    "sim_pollux_load.csv": ("fidelity", "Pollux at several loads", "python tools/pollux_load_table.py"),
    "pollux_generated_check.csv": ("fidelity", "Pollux's generated workloads against the shipped ones",
                                   "python tools/check_generated_pollux.py"),
    "sim_sia64.csv": ("fidelity", "Sia (SOSP'23) on its 64-GPU cluster", "python tools/sim_targets.py"),
    "sim_sia64_oracle.csv": ("fidelity", "Sia's cluster with the oracle estimator", "python tools/sim_targets.py"),
    "sim_sia64_sia_flat30.csv": ("fidelity", "Sia's cluster, flat 30 s restart", "python tools/sim_targets.py"),
    "sia_published_saturn1.csv": ("fidelity", "The published Sia simulator on saturn/1 (its own code)",
                                  "the siasosp23/artifacts sia-simulator, run outside the repository "
                                  "(see the file's first line)"),
    "sim_measured.csv": ("fidelity", "Measured step times against the published JCTs", "python tools/sim_measured.py"),
    "sim_measured_jobs.csv": ("fidelity", "Measured step times, per job", "python tools/sim_measured.py"),
    "sim_adaptivity_saturn1.csv": ("fidelity", "Adaptivity: rigid fractions on saturn/1",
                                   "schedopt reproduce sia --sections adaptivity"),
    "sim_gpt.csv": ("fidelity", "Pipeline-parallel GPT jobs in closed loop", "python tools/sim_gpt.py"),
    "sim_strong.csv": ("fidelity", "Strong-scaling jobs in closed loop", "python tools/sim_strong.py"),
    "sim_optimus.csv": ("fidelity", "Optimus", "python tools/sim_targets.py"),
    "sim_synergy_jct.csv": ("fidelity", "Synergy (OSDI'22): JCT against proportional shares",
                            "python tools/sim_synergy_loop.py"),
    "sim_synergy_jct_1000.csv": ("fidelity", "Synergy: 1,000 jobs", "python tools/sim_synergy_loop.py"),
    "sim_synergy_jct_high.csv": ("fidelity", "Synergy: high load", "python tools/sim_synergy_loop.py"),
    "sim_synergy_jct_opt.csv": ("fidelity", "Synergy: Synergy-OPT", "python tools/sim_synergy_loop.py"),
    "sim_synergy_deploy.csv": ("fidelity", "Synergy: the deployment traces", "python tools/sim_synergy_loop.py"),
    "sim_synergy_deploy_published.csv": ("fidelity", "Synergy: the published simulator replayed",
                                         "python tools/synergy_published_replay.py"),
    "sim_gandiva_ablation.csv": ("fidelity", "Gandiva (OSDI'18): mechanism ablation",
                                 "python tools/sim_gandiva_ablation.py"),
    "sim_gandiva_ablation_homogeneous.csv": ("fidelity", "Gandiva: ablation on a homogeneous cluster",
                                             "python tools/sim_gandiva_ablation.py"),
    "sim_gandiva_ablation_homogeneous_unclipped.csv": ("fidelity", "Gandiva: homogeneous, unclipped",
                                                       "python tools/sim_gandiva_ablation.py"),
    "reproduce_sia_full.md": ("fidelity", "Sia's evaluation reproduced (the full run's report)",
                              "schedopt reproduce sia -o out/"),
    "sim_fairness_sia64.md": ("fidelity", "Finish-time fairness on Sia's cluster", "python tools/sim_fairness_table.py"),
    "heterps_two_phase.csv": ("benchmarks", "HeterPS's RL scheduler: one phase against the paper's two",
                              "PYTHONPATH=. python tools/heterps_two_phase.py --seeds 0-9 --splits 0,30,75"),
}

#: columns that say when, at which commit or on which machine a row was measured
PROVENANCE = ("date", "timestamp", "commit", "version", "label", "env", "machine_cpu", "python", "load_avg_1m",
              "load_avg_1min")
MAX_ROWS = 40


def _write(path: Path, text: str) -> None:
    """Write unless unchanged (an unchanged page keeps its time stamp: Sphinx does not read it again)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_all(outdir: Path, root: Path) -> None:
    """Write every generated page under ``outdir`` from the repository at ``root``."""
    outdir.mkdir(parents=True, exist_ok=True)
    write_cards(outdir / "formulations", root / "formulations")
    write_schemas(outdir / "schemas.md", root / "schedopt" / "schemas")
    write_exit_codes(outdir / "exit_codes.md")
    write_records(outdir, root / "benchmarks")


def write_cards(outdir: Path, cards: Path) -> None:
    """One page per formulation card that includes the card itself (its links to sibling cards keep working)."""
    outdir.mkdir(parents=True, exist_ok=True)
    names = {card.name for card in cards.glob("*.md")}
    for old in outdir.glob("*.md"):
        if old.name not in names:
            old.unlink()
    for name in sorted(names):
        rel = Path("..", "..", "..", "formulations", name).as_posix()
        _write(outdir / name, f"```{{include}} {rel}\n:relative-images:\n```\n")


def write_schemas(path: Path, folder: Path) -> None:
    parts = ["# JSON schemas\n",
             "The documents schedopt reads and writes, as JSON Schemas shipped in the package (`schedopt/schemas/`, "
             "read with `schedopt.schemas.load(NAME)`); the tests validate real documents against them with the "
             "`jsonschema` package.\n"]
    for p in sorted(folder.glob("*.schema.json")):
        doc = json.loads(p.read_text())
        title = doc.get("title", p.stem)
        parts.append(f"## `{p.name}`: {title}\n")
        if doc.get("description"):
            parts.append(str(doc["description"]) + "\n")
        parts.append(f"```{{literalinclude}} ../../schedopt/schemas/{p.name}\n:language: json\n```\n")
    _write(path, "\n".join(parts))


def write_exit_codes(path: Path) -> None:
    from schedopt.cli_support import EXIT_CODES

    rows = "\n".join(f"| {code} | {meaning} |" for code, meaning in EXIT_CODES.items())
    _write(path, "| code | meaning |\n|---:|---|\n" + rows + "\n")


def _cell(v: str) -> str:
    return v.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "| " + " | ".join(_cell(h) for h in header) + " |\n|" + "---|" * len(header) + "\n"
    return head + "".join("| " + " | ".join(_cell(c) for c in r) + " |\n" for r in rows)


def _provenance(header: list[str], rows: list[list[str]]) -> str:
    said = []
    for col in PROVENANCE:
        if col in header:
            i = header.index(col)
            vals = sorted({r[i] for r in rows if i < len(r) and r[i]})
            if vals and col in ("date", "timestamp") and len(vals) > 2:
                said.append(f"{col}: from `{vals[0]}` to `{vals[-1]}`")
            elif vals:
                shown = ", ".join(f"`{v}`" for v in vals[:6]) + (f" and {len(vals) - 6} more" if len(vals) > 6 else "")
                said.append(f"{col}: {shown}")
    return ("Recorded " + "; ".join(said) + ".\n") if said else "The file records no date or commit.\n"


def _sia_sweep(header: list[str], rows: list[list[str]]) -> str:
    """The whole path's median time (``t_path``) per (load, GPUs) and backend, over the runs with a solution."""
    ix = {h: i for i, h in enumerate(header)}
    cells: dict[tuple[str, int, str], list[float]] = {}
    outcome: dict[tuple[str, int, str], set[str]] = {}
    for r in rows:
        key = (r[ix["load"]], int(r[ix["gpus"]]), r[ix["backend"]])
        outcome.setdefault(key, set()).add(r[ix["termination"]])
        if r[ix["t_path"]] and r[ix["has_incumbent"]].lower() in ("true", "1"):
            cells.setdefault(key, []).append(float(r[ix["t_path"]]))
    backends = sorted({k[2] for k in outcome}, key=lambda b: (b != "mckp", b))
    out = []
    for load in sorted({k[0] for k in outcome}):
        sizes = sorted({k[1] for k in outcome if k[0] == load})
        table = []
        for g in sizes:
            row = [str(g)]
            for b in backends:
                ts = cells.get((load, g, b))
                t = statistics.median(ts) if ts else None
                text = "" if t is None else (f"{t * 1000:.0f} ms" if t < 1 else f"{t:.2f} s")
                ends = outcome.get((load, g, b), set()) - {"optimal", "OPTIMAL"}
                if ends and (load, g, b) in outcome:
                    text += f" ({', '.join(sorted(ends))})"
                row.append(text)
            table.append(row)
        out.append(f"**Load `{load}`**: median whole path (goodput matrix, build, hand-off, solve, decode, "
                   f"placement) of the runs that held a solution.\n\n" + _table(["GPUs", *backends], table))
    return "\n".join(out)


def _markdown_record(p: Path) -> str:
    """A Markdown record, its headings two levels down; a figure the record names but the repository does not hold
    (reports write their PNGs beside them, and only the text is kept) becomes a line saying so."""
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^!\[([^]]*)\]\(([^)]+)\)\s*$", line)
        if m and not (p.parent / m.group(2)).exists():
            out.append(f"*(figure `{m.group(2)}`, {m.group(1)}: written by the command, not kept in the repository)*")
        elif line.startswith("#"):
            out.append("##" + line)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def write_records(outdir: Path, folder: Path) -> None:
    pages: dict[str, list[str]] = {"benchmarks": [], "fidelity": []}
    order = {name: i for i, name in enumerate(RECORDS)}  # the listed records first, in RECORDS' order
    for p in sorted(folder.iterdir(), key=lambda p: (order.get(p.name, len(order)), p.name)):
        if p.suffix not in (".csv", ".md"):
            continue
        page, title, command = RECORDS.get(p.name, ("benchmarks" if not p.name.startswith("sim_") else "fidelity",
                                                     p.stem, ""))
        part = [f"## {title}\n", f"Record: `benchmarks/{p.name}`. Command: "
                + (f"`{command}`.\n" if command else "not recorded.\n")]
        if p.suffix == ".md":
            part.append(_markdown_record(p))
        else:
            lines = p.read_text(encoding="utf-8").splitlines()
            comments = [line.lstrip("# ") for line in lines if line.startswith("#")]
            data = list(csv.reader(line for line in lines if not line.startswith("#")))
            if not data:
                continue
            header, rows = data[0], data[1:]
            if comments:
                part.append("The file says: " + " ".join(comments) + "\n")
            part.append(_provenance(header, rows))
            if {"t_path", "backend", "gpus", "load"} <= set(header):
                part.append(_sia_sweep(header, rows))
            else:
                keep = [i for i, h in enumerate(header) if h not in ("env", "packages", "extra", "error")]
                shown = [[r[i] if i < len(r) else "" for i in keep] for r in rows[:MAX_ROWS]]
                part.append(_table([header[i] for i in keep], shown))
                if len(rows) > MAX_ROWS:
                    part.append(f"\n{len(rows) - MAX_ROWS} more rows in the file.\n")
        pages[page].append("\n".join(part))
    intro = {
        "benchmarks": "# Benchmarks\n\nGenerated at build time from the records in `benchmarks/` (every table below "
                      "is the file's own rows, or their medians where it says so), with the command that wrote "
                      "each and the dates, commits and machines the file records. The machine is the project's "
                      "2-core one, usually shared with other work: read CPU seconds, not wall, and rerun the "
                      "command on yours.\n",
        "fidelity": "# Fidelity: our numbers beside the papers'\n\nGenerated at build time from the records in "
                    "`benchmarks/`: each simulation compared with the published results it reproduces (columns "
                    "`published_*` are the paper's or the published code's numbers). The cards in the formulation "
                    "pages say where and why the numbers differ.\n",
    }
    for page, parts in pages.items():
        _write(outdir / f"{page}.md", intro[page] + "\n" + "\n".join(parts))
