"""Build the label-free-accuracy task from sklearn's digits, made unmatchable to the bundled copy.

Every image first gets a secret, seed-fixed jitter (random rotation, scale and sub-pixel shift,
bilinear, plus pixel noise), so a nearest-neighbour lookup against sklearn's bundled digits no
longer recovers the held-out labels any better than the actor's own training images do (a test
checks this). Then: the seed-0 split (1000 source / 797 test), the source model trained on the
source images, and the 30 shifted copies of the test images (inputs only). The true accuracies
and test labels stay here, next to this script.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from scipy import ndimage
from sklearn.datasets import load_digits

from methods.entropy_enigma.data import all_shifts, apply_shift
from methods.entropy_enigma.model import train_source

SECRET_SEED = 61_803
HERE = Path(__file__).resolve().parent


def secret_jitter(x: np.ndarray, seed: int = SECRET_SEED, rot: float = 15.0, scale: float = 0.1,
                  shift: float = 0.75, noise: float = 0.04) -> np.ndarray:
    """Per-image random affine warp around the centre, then Gaussian pixel noise, clipped."""
    rng = np.random.default_rng(seed)
    centre = np.array([3.5, 3.5])
    out = []
    for img in x.reshape(-1, 8, 8):
        a = np.deg2rad(rng.uniform(-rot, rot))
        s = rng.uniform(1 - scale, 1 + scale)
        m = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]) / s
        offset = centre - m @ centre + rng.uniform(-shift, shift, size=2)
        out.append(ndimage.affine_transform(img, m, offset=offset, order=1, mode="constant"))
    out = np.stack(out).reshape(len(x), 64) + rng.normal(0.0, noise, size=(len(x), 64))
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def main() -> None:
    torch.set_num_threads(1)
    digits = load_digits()
    x = secret_jitter(digits.data / 16.0)
    y = digits.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(x))
    tr, te = perm[:1000], perm[1000:]
    env = HERE.parent / "env"
    (env / "data" / "shifted").mkdir(parents=True, exist_ok=True)
    np.savez(env / "data" / "source_train.npz", X=x[tr], y=y[tr])
    model = train_source(torch.from_numpy(x[tr]), torch.from_numpy(y[tr]), seed=0)
    torch.save(model.state_dict(), env / "source_model.pt")
    names, accs = [], []
    for kind, sev in all_shifts():
        xs = apply_shift(x[te], kind, sev)
        np.savez(env / "data" / "shifted" / f"{kind}_{sev}.npz", X=xs)
        with torch.no_grad():
            pred = model.eval()(torch.from_numpy(xs)).argmax(dim=1).numpy()
        names.append(f"{kind}_{sev}")
        accs.append(float((pred == y[te]).mean()))
    np.savez(HERE / "private.npz", names=np.array(names), accs=np.array(accs), test_labels=y[te],
             test_index=te)
    print(f"prepared 30 shifted sets; source accuracy {min(accs):.2f}..{max(accs):.2f}")


if __name__ == "__main__":
    main()
