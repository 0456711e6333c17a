"""Scheduling policies for :mod:`schedopt.sim` (interface in :mod:`schedopt.sim.policies.base`)."""

from .base import Decision, JobView, Policy, RoundState

__all__ = ["Decision", "JobView", "Policy", "RoundState"]
