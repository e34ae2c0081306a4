"""Write the 20 public development instances (with their truth) into ../env/data/dev/.

Runs offline and deterministically; the private evaluation instances are built by eval.py
itself from seeds that never leave scripts/.
"""

from pathlib import Path

import numpy as np

from methods.offline_irl.instances import SOLVER_KEYS, build_instance

DEV_SEEDS = range(1000, 1020)


def main() -> None:
    out = Path("..") / "env" / "data" / "dev"
    out.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(DEV_SEEDS):
        np.savez_compressed(out / f"dev_{i:02d}.npz", **build_instance(seed))
    print(f"wrote {len(DEV_SEEDS)} dev instances to {out}")
    # what the submission phase may see (produce.py): each split's private instances' solver
    # inputs, not their labels (eval.py rebuilds those from its seeds)
    from eval import SPLIT_SEEDS
    from produce import inputs_file

    Path("inputs").mkdir(exist_ok=True)
    for split, seeds in SPLIT_SEEDS.items():
        visible = {}
        for i, seed in enumerate(seeds):
            inst = build_instance(seed)
            visible.update({f"{i}/{k}": np.asarray(inst[k]) for k in SOLVER_KEYS})
        np.savez_compressed(Path("inputs") / inputs_file(split), **visible)


if __name__ == "__main__":
    main()
