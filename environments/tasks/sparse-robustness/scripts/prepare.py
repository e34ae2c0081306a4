"""Write the actor's training data, ../env/data/train.npz, in the task's secret pixel order."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval import split  # noqa: E402  (the permutation lives in eval.py only)


def main() -> None:
    X, y = split("train")
    out = Path(__file__).resolve().parent.parent / "env" / "data"
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "train.npz", X=X, y=y)
    print(f"wrote {out / 'train.npz'}: X {X.shape}, y {y.shape}")


if __name__ == "__main__":
    main()
