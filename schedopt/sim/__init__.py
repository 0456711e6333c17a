"""Round-based simulation of GPU-cluster scheduling policies over job traces (issue 14)."""
