"""Draw the 5 held-out MDPs (private seeds) and store their Q* next to this script."""

from pathlib import Path

import numpy as np

from methods.twora_q.mdp import make_random_mdp, q_star

PRIVATE_SEED = 20240721
N_HELDOUT = 5


def main() -> None:
    seeds = np.random.default_rng(PRIVATE_SEED).integers(10_000, 2**31 - 1, size=N_HELDOUT)
    qstars = np.stack([q_star(make_random_mdp(int(s), 0.9)) for s in seeds])
    np.savez(Path(__file__).parent / "heldout.npz", env_seeds=seeds, qstars=qstars)
    # what the submission phase may see (produce.py): the MDP seeds, not the true Q values
    (Path(__file__).parent / "inputs").mkdir(exist_ok=True)
    np.save(Path(__file__).parent / "inputs" / "env_seeds.npy", seeds)
    print(f"prepared {N_HELDOUT} held-out MDPs")


if __name__ == "__main__":
    main()
