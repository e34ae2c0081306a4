"""Write the actor's training data (1257 transformed digits) to ../env/data/train.npz."""

from pathlib import Path

import numpy as np

from digits_transform import transformed_split


def main() -> None:
    X_tr, y_tr, _, _ = transformed_split()
    out = Path("..") / "env" / "data"
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "train.npz", X=X_tr, y=y_tr)
    print(f"wrote {len(y_tr)} training images to {out / 'train.npz'}")


if __name__ == "__main__":
    main()
