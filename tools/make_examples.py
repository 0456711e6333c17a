"""Writes the bad instances shipped in ``schedopt/examples/`` (for ``schedopt explain example:NAME``).

    python tools/make_examples.py        # from the repository root; rewrites the files, byte-identical when unchanged

* ``heterps_unreachable.json``: HeterPS's ``nce`` model on 4 GPUs with a throughput floor of 1e9 samples/s, which no
  plan reaches (explain names the throughput limit);
* ``hived_bad_node.json``: the HiveD example cluster (``schedopt/hived/examples/example.yaml``) with node v100-b3
  marked bad, so team-y's quota no longer fits (explain names the chain, the level and the VC).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from schedopt import heterps, instances

OUT = Path("schedopt/examples")


def main() -> None:
    instances.save(heterps.generate("nce", 0, gpus=4).with_limit(1e9), OUT / "heterps_unreachable.json")
    shutil.copyfile("instances/hived/example-bad-node.json", OUT / "hived_bad_node.json")
    for p in sorted(OUT.glob("*.json")):
        print(p)


if __name__ == "__main__":
    main()
