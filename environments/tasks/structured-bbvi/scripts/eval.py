"""Score a workspace's family.py: mean gradient evaluations to KL <= 0.5 over 5 private problems.

Lower is better. Eval owns the model, log p and the ELBO (methods.structured_bbvi.interface); the
family sees only (d_global, d_local, N). A problem not solved within 20,000 iterations or 60 s of
CPU counts 2 x 20,000 x n_samples. A family that breaks the interface raises (an eval error).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402

import torch  # noqa: E402

from methods._submission import load_submission  # noqa: E402
from methods.structured_bbvi.interface import run_family_module  # noqa: E402
from methods.structured_bbvi.problem import make_problem  # noqa: E402

PRIVATE = [(8_111 + 13 * i, 5_309 + 31 * i) for i in range(5)]  # (problem seed, Monte Carlo seed)
N, D_GLOBAL, D_LOCAL, OBS_PER_GROUP = 32, 2, 2, 5
TIME_LIMIT_S = 60.0


def get_score(submission_folder: str) -> float:
    torch.set_num_threads(1)
    module = load_submission(submission_folder, "family.py")
    scores = []
    for problem_seed, mc_seed in PRIVATE:
        problem = make_problem(N, D_GLOBAL, D_LOCAL, OBS_PER_GROUP, problem_seed=problem_seed)
        result, evals = run_family_module(module, problem, mc_seed, time_limit=TIME_LIMIT_S)
        scores.append(evals)
        print(f"problem {len(scores)}: iterations {result.iters_to_eps}, grad evals {evals}")
    return float(sum(scores) / len(scores))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
