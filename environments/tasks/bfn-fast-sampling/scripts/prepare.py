"""Write the dev oracle (the digits GMM) into the workspace and a private copy for eval.py."""

from pathlib import Path

import numpy as np

from methods.bfn_solver.gmm import digits_gmm

HERE = Path(__file__).resolve().parent


def main() -> None:
    params = digits_gmm().to_npz()
    np.savez(HERE.parent / "env" / "dev_oracle.npz", **params)
    (HERE / "private").mkdir(exist_ok=True)
    np.savez(HERE / "private" / "gmm.npz", **params)
    print("wrote env/dev_oracle.npz and scripts/private/gmm.npz")


if __name__ == "__main__":
    main()
