"""Score a workspace's train.py: 1 − mean worst-group accuracy over 5 private runs (lower is better).

Each run has private seeds and a private coordinate permutation. Eval builds the biased stream
(budget 512,000 samples), the 500-sample balanced set and 4000 balanced test samples, calls
train(stream, balanced, seed), copies the returned weights into the fixed Net and scores the
worst of the four (label, spurious) groups, whose spurious labels only eval sees. A run that
exceeds the budget or 60 s of CPU scores 0 worst-group accuracy; a net whose weights do not fit
the fixed architecture raises.

Three private splits of 5 runs each, every run with seeds and a permutation of its own
(``produce.py: SPLIT_RUNS``, the test seeds in :data:`TEST_SEEDS`): ``score`` on ``test`` (the
runs scored all along), ``search_score`` and ``select_score`` on theirs.

Two phases (``environments/submission.py``): ``produce.py`` runs train() in the submission
phase (on the runs of the split named by ``split.txt``) and saves the weights; this file builds the test set and scores them. The CPU limit is
now the sandbox's (``eval_timeout``), measured from outside.

The metric is the worst-group *error*, 1 − mean WGA: labcoat's improvement is relative, and a
relative gain over an ERM baseline WGA near 0 means nothing. task.toml sets the threshold so that
success is an absolute WGA gain of +0.25.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import importlib.util  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from methods._submission import load_json, load_outputs  # noqa: E402
from methods.spurious_boolean.metrics import evaluate  # noqa: E402
from methods.spurious_boolean.model import Net  # noqa: E402
from methods.spurious_boolean.stream import (  # noqa: E402
    balanced_batch,
    permutation_from_seed,
)

# (train seed, stream seed, balanced seed, test seed, permutation seed)
PRIVATE = [(31 + i, 7_001 + 17 * i, 8_003 + 19 * i, 9_011 + 23 * i, 6_007 + 29 * i) for i in range(5)]
N_TEST = 4000
TEST_SEEDS = {"test": [test for *_, test, _ in PRIVATE],
              "search": [9_311 + 23 * i for i in range(5)],
              "select": [9_611 + 23 * i for i in range(5)]}


def _produce_module():
    """produce.py beside this file, by path (another task's ``produce`` may be imported)."""
    spec = importlib.util.spec_from_file_location(
        "spurious_features_produce", Path(__file__).resolve().parent / "produce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPLIT_RUNS = _produce_module().SPLIT_RUNS  # each split's train, stream, balanced, permutation seeds


def split_members(split: str) -> list[str]:
    """A split's runs, as "train/stream/balanced/test/permutation" seeds."""
    return ["/".join(map(str, (*run[:3], test, run[3])))
            for run, test in zip(SPLIT_RUNS[split], TEST_SEEDS[split], strict=True)]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    torch.set_num_threads(1)
    gates = load_json(outputs)["gates"]
    wgas = []
    runs = [(test, run[3]) for run, test in zip(SPLIT_RUNS[split], TEST_SEEDS[split], strict=True)]
    for i, (test_seed, perm_seed) in enumerate(runs):
        if str(i) in gates:
            print(f"gate: run {i}: {gates[str(i)]}")
            wgas.append(0.0)
            continue
        state = {k: torch.from_numpy(v) for k, v in load_outputs(outputs, f"run{i}").items()}
        scored = Net()
        scored.load_state_dict(state)  # raises unless the architecture is the fixed one
        test = balanced_batch(test_seed, permutation_from_seed(perm_seed), N_TEST)
        with torch.no_grad():
            stats = evaluate(scored(test.x), test)
        print(f"run {i}: worst-group acc {stats['worst_group_acc']:.3f}, avg acc {stats['avg_acc']:.3f}")
        wgas.append(float(stats["worst_group_acc"]))
    mean = sum(wgas) / len(wgas)
    print(f"mean worst-group accuracy {mean:.4f}")
    return 1.0 - mean
