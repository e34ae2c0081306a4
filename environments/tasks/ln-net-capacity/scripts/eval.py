"""Score a workspace's net.json: mean training accuracy on 5 private random-label datasets.

Each dataset: m = 256 points X ~ N(0, I_8), uniformly random binary labels drawn here (so
nothing can leak). The net is built and trained by the workspace's (read-only, pristine) lnlib.
Gates (each scores 0): a valid net.json, at most 1,600 parameters, at most 800 full-batch steps,
only linear and norm layers (lnlib builds nothing else), at most 10 s of CPU per dataset.

The three private splits (``task.toml [splits]``) are disjoint sets of dataset seeds drawn here:
``test`` the five the task has always scored (:data:`PRIVATE_SEEDS`), ``search`` and ``select``
five new ones each; every split is scored the same way (:func:`split_score`).

A data-only task under the scoring contract (``environments/submission.py``): the submission
is net.json, and the only code in the scored copy is the task's pristine, read-only lnlib.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import importlib.util  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

PRIVATE_SEEDS = (52_331, 52_337, 52_361, 52_363, 52_369)  # test: unchanged since version 1
SPLIT_SEEDS = {
    "search": (61_403, 61_409, 61_417, 61_441, 61_463),
    "select": (70_001, 70_003, 70_009, 70_019, 70_039),
    "test": PRIVATE_SEEDS,
}
M, D = 256, 8
CPU_LIMIT_S = 10.0
WORST = 0.0


def split_members(split: str) -> list[int]:
    """The dataset seeds ``split`` is made of."""
    return list(SPLIT_SEEDS[split])


def get_score(submission_folder: str) -> float:
    return split_score(submission_folder, "test")


def get_search_score(submission_folder: str) -> float:
    return split_score(submission_folder, "search")


def get_select_score(submission_folder: str) -> float:
    return split_score(submission_folder, "select")


def split_score(submission_folder: str, split: str) -> float:
    """net.json's mean training accuracy on the datasets of ``split``; the init seed of the
    i-th dataset is i in every split (the test's, as it always was)."""
    folder = Path(submission_folder).resolve()
    # lnlib.py is read-only: the scorer lays the pristine copy over the workspace, and a
    # data-only task's trusted phase keeps only such files (environments/submission.py)
    spec_ = importlib.util.spec_from_file_location("lnlib", folder / "lnlib.py")
    lnlib = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(lnlib)
    try:
        spec = lnlib.load_spec(folder / "net.json")
        lnlib.build(spec)
    except lnlib.NetSpecError as err:
        print(f"gate: {err}")
        return WORST
    accs = []
    for i, seed in enumerate(SPLIT_SEEDS[split]):
        gen = torch.Generator().manual_seed(seed)
        X = torch.randn(M, D, generator=gen)
        y = torch.randint(0, 2, (M,), generator=gen)
        r = lnlib.train_accuracy(spec, X, y, seed=i)
        if r["cpu_seconds"] > CPU_LIMIT_S:
            print(f"gate: dataset {i} took {r['cpu_seconds']:.1f} s of CPU (limit {CPU_LIMIT_S})")
            return WORST
        accs.append(r["train_acc"])
        print(f"dataset {i}: train_acc {r['train_acc']:.4f} ({r['cpu_seconds']:.1f} s CPU)")
    score = sum(accs) / len(accs)
    print(f"train_acc_mean {score:.4f}")
    return score


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
