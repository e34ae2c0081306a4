"""Score a workspace's family.py: mean gradient evaluations to KL <= 0.5 over 5 private problems.

Lower is better. Eval owns the model, log p and the ELBO (methods.structured_bbvi.interface); the
family sees only (d_global, d_local, N). A problem not solved within 20,000 iterations or 60 s of
CPU counts 2 x 20,000 x n_samples. A family that breaks the interface raises (an eval error).
Three private splits (:data:`SPLITS`) of 5 problems each, every problem a (problem seed, Monte
Carlo seed) pair of its own: ``score`` on ``test`` (the problems scored all along),
``search_score`` and ``select_score`` on theirs; the submission (the family) is the same.
Two phases (``environments/submission.py``): ``produce.py`` turns family.py into data (init's
tensors, CONFIG as JSON, location_scale as a ``torch.export`` graph); this rebuilds the family
from them with ``load_exported_module`` (pure allow-listed ops only) and runs the loop, so no
code of the submission's runs in this process.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import torch  # noqa: E402

from methods._exported import TensorSpec, load_exported_module  # noqa: E402
from methods._submission import load_json, load_outputs  # noqa: E402
from methods.structured_bbvi.interface import run_family_module  # noqa: E402
from methods.structured_bbvi.problem import make_problem  # noqa: E402

PRIVATE = [(8_111 + 13 * i, 5_309 + 31 * i) for i in range(5)]  # (problem seed, Monte Carlo seed)
SPLITS = {"test": PRIVATE,
          "search": [(9_203 + 13 * i, 6_113 + 31 * i) for i in range(5)],
          "select": [(10_301 + 13 * i, 7_019 + 31 * i) for i in range(5)]}
N, D_GLOBAL, D_LOCAL, OBS_PER_GROUP = 32, 2, 2, 5
TIME_LIMIT_S = 60.0


def load_family(outputs: Path) -> SimpleNamespace:
    """The family the submission phase wrote, with family.py's interface (init,
    location_scale, CONFIG) and nothing of its code."""
    params = {k: torch.from_numpy(v) for k, v in load_outputs(outputs, "init").items()}
    d = D_GLOBAL + N * D_LOCAL
    ls = load_exported_module(outputs, "location_scale", (params,),
                              [TensorSpec(shape=(d,), dtype="float64"),
                               TensorSpec(shape=(d, d), dtype="float64")])

    def init(d_global: int, d_local: int, n: int) -> dict:
        if (d_global, d_local, n) != (D_GLOBAL, D_LOCAL, N):
            raise ValueError("init() was saved for (2, 2, 32) only")
        return {k: v.clone() for k, v in params.items()}

    return SimpleNamespace(init=init, location_scale=ls, CONFIG=load_json(outputs, "config"))


def split_members(split: str) -> list[str]:
    """A split's problems, as "problem seed/Monte Carlo seed"."""
    return [f"{p}/{m}" for p, m in SPLITS[split]]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    torch.set_num_threads(1)
    module = load_family(Path(outputs))
    scores = []
    for problem_seed, mc_seed in SPLITS[split]:
        problem = make_problem(N, D_GLOBAL, D_LOCAL, OBS_PER_GROUP, problem_seed=problem_seed)
        result, evals = run_family_module(module, problem, mc_seed, time_limit=TIME_LIMIT_S)
        scores.append(evals)
        print(f"problem {len(scores)}: iterations {result.iters_to_eps}, grad evals {evals}")
    return float(sum(scores) / len(scores))


if __name__ == "__main__":
    print(score(sys.argv[1] if len(sys.argv) > 1 else "."))
