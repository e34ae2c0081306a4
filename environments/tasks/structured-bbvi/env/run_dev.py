"""Fit family.py on the 3 dev problems with eval's loop; print gradient evaluations to KL <= 0.5.

Monte Carlo seed = problem seed here. A miss counts 2 x 20,000 x n_samples, as in eval.
Usage: python run_dev.py
"""

import time

import family
import problem
import torch

from methods.structured_bbvi.interface import run_family_module

torch.set_num_threads(1)


def main() -> None:
    scores = []
    for seed in problem.DEV_SEEDS:
        start = time.perf_counter()
        result, evals = run_family_module(family, problem.dev_problem(seed), mc_seed=seed)
        scores.append(evals)
        print(f"problem {seed}: iterations {result.iters_to_eps} (KL {result.final_kl:.3f}), "
              f"grad evals {evals}, {time.perf_counter() - start:.1f}s")
    print(f"mean grad evals to KL <= 0.5: {sum(scores) / len(scores):.0f}")


if __name__ == "__main__":
    main()
