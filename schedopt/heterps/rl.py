"""The paper's RL scheduler as a baseline: an LSTM policy over the layer sequence, trained with REINFORCE.

Policy (numpy, no deep-learning framework): per-layer features (index, kind one-hot, log input size, log weight size,
per-type OCT and ODT, alpha, beta; each column scaled to [-1, 1]) go through a single-layer LSTM (hidden size
``hidden``) along the layers; a linear head gives each layer's logits over the resource types. A plan is sampled one
type per layer. Because the features do not depend on the sampled actions, the LSTM runs once per update and the
REINFORCE gradient of ``sum_l log pi(a_l)`` flows back through time (hand-written BPTT, checked against finite
differences in the tests).

Reward: ``-log(cost)`` of the plan provisioned by ``provisioning``; a plan that cannot meet the throughput floor gets
``-log(worst feasible cost seen) - 1 - 5 * shortfall`` (shortfall = ``1 - reachable throughput / limit``). Advantages
are the batch rewards minus their mean, over their standard deviation. Adam, seeded; the best plan ever sampled is
returned (as the paper's scheduler keeps its best plan).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .core import HeterPSPlan
from .heuristics import PlanCoster
from .spec import HeterPSProblem

__all__ = ["PRETRAIN_ITERATIONS", "LSTMPolicy", "layer_features", "solve_rl"]

#: ``solve_rl``'s default phase-1 length (updates on random plans before REINFORCE on the policy's own)
PRETRAIN_ITERATIONS = 0


def layer_features(problem: HeterPSProblem) -> np.ndarray:
    """(L, F) per-layer features the policy reads."""
    L = problem.num_layers
    kinds = sorted({layer.kind for layer in problem.layers})
    arr = problem.arrays()
    cols = [
        np.arange(L) / max(L - 1, 1),
        *(np.array([layer.kind == k for layer in problem.layers], dtype=float) for k in kinds),
        np.log1p([layer.input_size for layer in problem.layers]),
        np.log1p([layer.weight_size for layer in problem.layers]),
        *np.log(arr["oct"]).T,
        *np.log(arr["odt"] + 1e-6).T,
        np.array([layer.alpha for layer in problem.layers]),
        np.array([layer.beta for layer in problem.layers]),
    ]
    X = np.column_stack(cols)
    X = X - X.mean(axis=0)
    scale = np.abs(X).max(axis=0)
    return X / np.where(scale > 0, scale, 1.0)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass
class LSTMPolicy:
    """A one-layer LSTM with a linear head: ``logits(X) -> (L, m)``; ``grad(X, G)`` back-propagates ``dLoss/dlogits``."""

    W: np.ndarray  # (4H, F + H) gates i, f, o, g
    b: np.ndarray  # (4H,)
    Wo: np.ndarray  # (m, H)
    bo: np.ndarray  # (m,)

    @classmethod
    def init(cls, n_features: int, n_types: int, hidden: int, rng: np.random.Generator) -> LSTMPolicy:
        s = 1.0 / math.sqrt(n_features + hidden)
        b = np.zeros(4 * hidden)
        b[hidden : 2 * hidden] = 1.0  # forget-gate bias
        return cls(rng.normal(0, s, (4 * hidden, n_features + hidden)), b,
                   rng.normal(0, 0.1, (n_types, hidden)), np.zeros(n_types))

    @property
    def params(self) -> list[np.ndarray]:
        return [self.W, self.b, self.Wo, self.bo]

    def forward(self, X: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, ...]], np.ndarray]:
        H = self.Wo.shape[1]
        h = np.zeros(H)
        c = np.zeros(H)
        cache: list[tuple[np.ndarray, ...]] = []
        hs = []
        for x in X:
            z = self.W @ np.r_[x, h] + self.b
            i, f, o = _sigmoid(z[:H]), _sigmoid(z[H : 2 * H]), _sigmoid(z[2 * H : 3 * H])
            g = np.tanh(z[3 * H :])
            c_new = f * c + i * g
            tc = np.tanh(c_new)
            h_new = o * tc
            cache.append((x, h, c, i, f, o, g, tc))
            h, c = h_new, c_new
            hs.append(h)
        Hs = np.array(hs)
        return Hs @ self.Wo.T + self.bo, cache, Hs

    def logits(self, X: np.ndarray) -> np.ndarray:
        return self.forward(X)[0]

    def grad(self, X: np.ndarray, G: np.ndarray) -> list[np.ndarray]:
        """Gradients of ``sum(G * logits(X))`` with respect to W, b, Wo, bo."""
        _, cache, hs = self.forward(X)
        H = self.Wo.shape[1]
        dW, db = np.zeros_like(self.W), np.zeros_like(self.b)
        dWo = G.T @ hs
        dbo = G.sum(axis=0)
        dh_next = np.zeros(H)
        dc_next = np.zeros(H)
        for t in range(len(cache) - 1, -1, -1):
            x, h_prev, c_prev, i, f, o, g, tc = cache[t]
            dh = self.Wo.T @ G[t] + dh_next
            do = dh * tc
            dc = dh * o * (1 - tc**2) + dc_next
            di, df, dg = dc * g, dc * c_prev, dc * i
            dz = np.r_[di * i * (1 - i), df * f * (1 - f), do * o * (1 - o), dg * (1 - g**2)]
            dW += np.outer(dz, np.r_[x, h_prev])
            db += dz
            dxh = self.W.T @ dz
            dh_next = dxh[X.shape[1] :]
            dc_next = dc * f
        return [dW, db, dWo, dbo]


def solve_rl(problem: HeterPSProblem, *, seed: int = 0, iterations: int = 150, batch: int = 32, lr: float = 0.05,
             hidden: int = 16, entropy: float = 0.01, provisioning: str = "exact",
             pretrain_iterations: int = PRETRAIN_ITERATIONS) -> HeterPSPlan:
    """Train the LSTM policy in the paper's two phases and return the best feasible plan evaluated
    (NO_SOLUTION_FOUND with the heuristic limit when none was). Deterministic for a given seed.

    Phase 1, ``pretrain_iterations`` updates: ``batch`` plans drawn uniformly at random (a type per layer), their
    rewards from their costs, the policy moved towards the better ones (the advantage-weighted log-likelihood, the
    same gradient as REINFORCE's for plans it did not sample). Phase 2, ``iterations`` updates: REINFORCE on
    ``batch`` plans sampled from the updated policy. ``pretrain_iterations=0`` is the single-phase REINFORCE of
    earlier versions (the same plans and result for a seed). ``info``: ``best_cost_curve`` (best cost per update,
    both phases), ``pretrain_iterations``, ``best_cost_pretrain`` (the best after phase 1; inf when none),
    ``plan_evaluations`` (distinct plans costed), ``plan_evaluations_pretrain`` (of them, in phase 1: the rest are
    the plans phase 2 "measures", which the paper's pretraining is there to save)."""
    t0 = time.perf_counter()
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("seed", seed, "must be an integer")
    for name, v in (("iterations", iterations), ("batch", batch), ("hidden", hidden)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(name, v, "must be a positive integer")
    if isinstance(pretrain_iterations, bool) or not isinstance(pretrain_iterations, int) or pretrain_iterations < 0:
        raise InputError("pretrain_iterations", pretrain_iterations, "must be an integer >= 0")
    rng = np.random.default_rng(seed)
    coster = PlanCoster(problem, provisioning)
    X = layer_features(problem)
    m = len(problem.types)
    pol = LSTMPolicy.init(X.shape[1], m, hidden, rng)
    # phase 1 draws from its own stream, so pretrain_iterations=0 leaves phase 2's draws as they were
    rand = np.random.default_rng([seed, 1])
    mom = [np.zeros_like(p) for p in pol.params]
    vel = [np.zeros_like(p) for p in pol.params]
    best: tuple[float, list[int]] | None = None
    worst_log = None
    curve = []
    best_pre, evals_pre = math.inf, 0
    for step in range(1, pretrain_iterations + iterations + 1):
        logits = pol.logits(X)
        z = logits - logits.max(axis=1, keepdims=True)
        pi = np.exp(z)
        pi /= pi.sum(axis=1, keepdims=True)
        if step <= pretrain_iterations:  # phase 1: random plans
            acts = rand.integers(0, m, size=(batch, X.shape[0]))
        else:  # phase 2: plans of the updated policy
            u = rng.random((batch, X.shape[0], 1))
            acts = (u > np.cumsum(pi, axis=1)[None]).sum(axis=2).clip(0, m - 1)  # (batch, L)
        res = [coster(a) for a in acts]
        logc = np.array([math.log(max(c, 1e-300)) if math.isfinite(c) else math.nan for c, _, _ in res])
        if np.isfinite(logc).any():
            w = float(np.nanmax(logc))
            worst_log = w if worst_log is None else max(worst_log, w)
        base = worst_log if worst_log is not None else 0.0
        r = np.array([-lc if math.isfinite(lc) else -base - 1.0 - 5.0 * s for lc, (_, _, s) in zip(logc, res)])
        for j, (c, _, _) in enumerate(res):
            if math.isfinite(c) and (best is None or c < best[0]):
                best = (c, acts[j].tolist())
        curve.append(float(np.nanmin(np.where(np.isfinite(logc), np.exp(logc), np.nan))) if np.isfinite(logc).any() else math.inf)
        if step == pretrain_iterations:
            best_pre = best[0] if best is not None else math.inf
            evals_pre = coster.evaluations
        adv = r - r.mean()
        sd = adv.std()
        adv = adv / sd if sd > 1e-12 else adv * 0
        onehot = np.zeros((batch, X.shape[0], m))
        np.put_along_axis(onehot, acts[:, :, None], 1.0, axis=2)
        # ascent on E[adv * log pi(a)] + entropy * H(pi): d/dlogits
        G = (adv[:, None, None] * (onehot - pi[None])).mean(axis=0)
        logpi = np.log(pi + 1e-300)
        ent_g = -pi * (logpi - (pi * logpi).sum(axis=1, keepdims=True))
        G = G + entropy * ent_g
        grads = pol.grad(X, G)
        for p, g, m1, v1 in zip(pol.params, grads, mom, vel):
            m1 *= 0.9
            m1 += 0.1 * g
            v1 *= 0.999
            v1 += 0.001 * g * g
            p += lr * (m1 / (1 - 0.9**step)) / (np.sqrt(v1 / (1 - 0.999**step)) + 1e-8)
    return coster.result(None if best is None else best[1], f"rl-lstm-{provisioning}", t0, seed=seed,
                         iterations=iterations, batch=batch, best_cost_curve=curve,
                         pretrain_iterations=pretrain_iterations, best_cost_pretrain=best_pre,
                         plan_evaluations_pretrain=evals_pre)
