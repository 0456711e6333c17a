"""Derive ``schedopt/zoo/gpt_pmp.json``: the Sia artifact's pipeline-model-parallel GPT (run offline).

Usage: ``python tools/derive_gpt_pmp.py [../shared/data]`` (the path is relative to the repository root).

Source: ``siasosp23/artifacts@aaf7a0de sia-simulator/traces/gpt_pmp/`` (a 2.8B-parameter Megatron-style GPT,
profiled on the A100 DGX (``dgx-ext``) and the RTX 2080Ti (``rtx``) only). ``placements-<suffix>.csv`` rows are
``local_bsz, step_time, sync_time, placement``: ``step_time`` is one pipeline stage's forward time for a micro-batch
of ``local_bsz`` samples and ``sync_time`` the data-parallel all-reduce; the placement's digits are GPUs per node.
The pipeline depth (the scale unit P), 48 micro-batches of 1 sample and the 2 epochs are the artifact's
``applications.py`` (``PMPApplication``: ``num_stages`` 2 on dgx-ext, 8 on rtx). The ``validation-*.csv`` tables are
byte-identical to BERT's (same git blobs), so the training curve is BERT's: that is kept and said.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "schedopt" / "zoo" / "gpt_pmp.json"
TYPES = {"a100": ("dgx-ext", 2), "rtx2080ti": ("rtx", 8)}


def main(data: str = "../shared/data") -> None:
    d = (ROOT / data / "sia-artifacts" / "sia-simulator" / "traces" / "gpt_pmp").resolve()
    bert = d.parent / "bert"
    types = {}
    for t, (suf, stages) in TYPES.items():
        with (d / f"placements-{suf}.csv").open(newline="") as f:
            rows = [[r["placement"], int(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"])]
                    for r in csv.DictReader(f)]
        types[t] = {"suffix": suf, "stages": stages, "placements": rows}
    same = all((d / p.name).read_bytes() == p.read_bytes() for p in bert.glob("validation-*.csv"))
    doc = {
        "name": "gpt_pmp",
        "source": "siasosp23/artifacts@aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70 sia-simulator/traces/gpt_pmp/ "
                  "(placements-dgx-ext.csv, placements-rtx.csv; constants of sia-simulator/applications.py)",
        "microbatches": 48, "microbatch_size": 1, "epochs": 2, "slowdown": 1.0,
        "training_curve": "bert" if same else "own",
        "gpu_types": types,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}; validation tables identical to bert's: {same}")


if __name__ == "__main__":
    main(*sys.argv[1:])
