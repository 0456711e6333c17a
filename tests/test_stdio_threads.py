"""stdout_to_stderr from two threads at once: descriptor 1 comes back to stdout whatever the order of leaving (it
stayed on stderr for the rest of the process when the mckp residual and the HiGHS race interleaved)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import os, sys, threading
from schedopt.stdio import stdout_to_stderr

a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

def first():
    with stdout_to_stderr():
        a_in.set()
        b_in.wait()
        os.write(1, b"C-level write inside\n")
    a_out.set()

def second():
    a_in.wait()
    with stdout_to_stderr():
        b_in.set()
        a_out.wait()  # the first thread leaves while this one is still inside

ta, tb = threading.Thread(target=first), threading.Thread(target=second)
ta.start(); tb.start(); ta.join(); tb.join()
os.write(1, b"after both\n")
with stdout_to_stderr(), stdout_to_stderr():  # nested on one thread
    os.write(1, b"nested inside\n")
print("printed after", flush=True)
"""


def test_interleaved_threads_restore_stdout() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["after both", "printed after"]
    assert out.stderr.splitlines() == ["C-level write inside", "nested inside"]
