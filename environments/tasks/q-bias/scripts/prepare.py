"""Draw the held-out MDPs (private seeds) and store their Q* next to this script.

Three private splits of 5 MDPs each, all drawn from ``PRIVATE_SEED``'s generator: ``test`` (the
first 5 seeds, what the task scored all along), then ``search`` and ``select`` (the next 10).
Each split's Q* goes to its own private file (``heldout.npz`` for test, ``search.npz``,
``select.npz``); the submission phase sees only the seeds (``inputs/``).
"""

import sys
from pathlib import Path

import numpy as np

from methods.twora_q.mdp import make_random_mdp, q_star

sys.path.insert(0, str(Path(__file__).resolve().parent))
from produce import seeds_file  # noqa: E402  (where produce.py reads a split's seeds)

PRIVATE_SEED = 20240721
N_HELDOUT = 5
DEV_SEED = 1234  # env/run_dev.py's public MDP: never in a private split
HERE = Path(__file__).resolve().parent
FILES = {"test": "heldout.npz", "search": "search.npz", "select": "select.npz"}


def split_seeds() -> dict[str, np.ndarray]:
    """The MDP seeds of each split: test first (unchanged), then search and select."""
    rng = np.random.default_rng(PRIVATE_SEED)
    test = rng.integers(10_000, 2**31 - 1, size=N_HELDOUT)
    more = rng.integers(10_000, 2**31 - 1, size=2 * N_HELDOUT)
    seeds = {"test": test, "search": more[:N_HELDOUT], "select": more[N_HELDOUT:]}
    every = np.concatenate(list(seeds.values()))
    assert len(set(every.tolist()) | {DEV_SEED}) == len(every) + 1, "split seeds collide"
    return seeds


def main() -> None:
    (HERE / "inputs").mkdir(exist_ok=True)
    for split, seeds in split_seeds().items():
        qstars = np.stack([q_star(make_random_mdp(int(s), 0.9)) for s in seeds])
        np.savez(HERE / FILES[split], env_seeds=seeds, qstars=qstars)
        # what the submission phase may see (produce.py): the MDP seeds, not the true Q values
        np.save(seeds_file(HERE, split), seeds)
    print(f"prepared {N_HELDOUT} held-out MDPs per split (search, select, test)")


if __name__ == "__main__":
    main()
