"""Build the label-free-accuracy task from sklearn's digits, made unmatchable to the bundled copy.

Every image first gets a secret, seed-fixed jitter (random rotation, scale and sub-pixel shift,
bilinear, plus pixel noise), so a nearest-neighbour lookup against sklearn's bundled digits no
longer recovers the held-out labels any better than the actor's own training images do (a test
checks this). Then: the seed-0 split (1000 source / 797 held-out), the source model trained on
the source images, and the held-out digits carved into the three private splits
(environments/task/splits.py), disjoint and stratified by label, fixed by the secret seed:
test 399, search 199, select 199 (scikit-learn's 1,797 images cannot grow). Each split is the 30
shifted copies of its own images (inputs only): test's in the workspace's data/shifted/, search's
and select's under inputs/<split>/. The true accuracies, labels and image indices stay here,
next to this script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from scipy import ndimage
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from methods.entropy_enigma.data import all_shifts, apply_shift
from methods.entropy_enigma.model import train_source

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from eval import private_file  # noqa: E402

SECRET_SEED = 61_803  # secret: fixes the jitter and the carving of the held-out digits
SPLIT_SIZES = {"test": 399, "search": 199, "select": 199}  # of the 797 held-out digits


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


def shifted_sets(model, x: np.ndarray, y: np.ndarray, folder: Path,
                 prefix: str = "") -> tuple[list[str], list[float]]:
    """The 30 shifted copies of ``x`` into ``folder`` (inputs only) as ``<prefix><kind>_<sev>``;
    their names and the source model's true accuracy on each."""
    folder.mkdir(parents=True, exist_ok=True)
    names, accs = [], []
    for kind, sev in all_shifts():
        xs = apply_shift(x, kind, sev)
        names.append(f"{prefix}{kind}_{sev}")
        np.savez(folder / f"{names[-1]}.npz", X=xs)
        with torch.no_grad():
            pred = model.eval()(torch.from_numpy(xs)).argmax(dim=1).numpy()
        accs.append(float((pred == y).mean()))
    return names, accs


def carve(held_out: np.ndarray, labels: np.ndarray, seed: int = SECRET_SEED) -> dict[str, np.ndarray]:
    """``held_out`` (image indices) cut into the three private splits of :data:`SPLIT_SIZES`,
    stratified by ``labels`` and fixed by ``seed``. Each part keeps ``held_out``'s shuffled order,
    so a row's place in a set says nothing of its label (the bundled digits cycle 0-9)."""
    assert sum(SPLIT_SIZES.values()) == len(held_out)
    places = np.arange(len(held_out))
    test, rest = train_test_split(places, train_size=SPLIT_SIZES["test"], stratify=labels,
                                  random_state=seed)
    search, select = train_test_split(rest, train_size=SPLIT_SIZES["search"],
                                      stratify=labels[rest], random_state=seed)
    return {split: held_out[np.sort(part)] for split, part in
            (("test", test), ("search", search), ("select", select))}


def main() -> None:
    torch.set_num_threads(1)
    digits = load_digits()
    x = secret_jitter(digits.data / 16.0)
    y = digits.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(x))
    tr, te = perm[:1000], perm[1000:]
    env = HERE.parent / "env"
    (env / "data").mkdir(parents=True, exist_ok=True)
    np.savez(env / "data" / "source_train.npz", X=x[tr], y=y[tr])
    model = train_source(torch.from_numpy(x[tr]), torch.from_numpy(y[tr]), seed=0)
    torch.save(model.state_dict(), env / "source_model.pt")
    for split, index in carve(te, y[te]).items():
        # test's sets are the public ones; search's and select's go where only the submission
        # phase reads them, named apart (<split>-kind_sev) so no name matches a public file
        public = split == "test"
        folder = env / "data" / "shifted" if public else HERE / "inputs" / split
        names, accs = shifted_sets(model, x[index], y[index], folder,
                                   prefix="" if public else f"{split}-")
        np.savez(HERE / private_file(split), names=np.array(names), accs=np.array(accs),
                 labels=y[index], index=index)
        print(f"{split}: 30 shifted sets of {len(index)} held-out digits; source accuracy "
              f"{min(accs):.2f}..{max(accs):.2f}")


if __name__ == "__main__":
    main()
