"""Reference: BFN-Solver++2M (second-order multistep ODE solver in data-prediction form) with
10 calls on the uniform grid t_i = 0.01 + i/10 * 0.99, returning the last x_hat (last_drop)."""

import numpy as np

from methods.bfn_solver.samplers import sample as solver_sample

D = 64


def sample(denoise, n: int, nfe: int, rng: np.random.Generator) -> np.ndarray:
    return solver_sample(denoise, "ode2m", n, D, nfe, rng)
