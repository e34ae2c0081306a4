"""Score feasible.classify on the 20 development instances in data/dev/ (same rules as eval).

Each dev npz also holds the true MDP (P, d0, pi_E, pi_b) and the true labels
(in_subset_true, in_superset_true), so you can study where your method is loose or unsound.
The private evaluation uses 30 fresh instances from the same generator.
"""

from __future__ import annotations

import glob

import numpy as np

from feasible import classify

INPUT_KEYS = ("D_E", "D_b", "R", "S", "A", "H", "n", "delta")


def main() -> None:
    recalls, unsound = [], 0
    for path in sorted(glob.glob("data/dev/*.npz")):
        with np.load(path) as f:
            inst = {k: f[k] for k in INPUT_KEYS}
            true_sub, true_sup = f["in_subset_true"], f["in_superset_true"]
        sub, sup = (np.asarray(x, dtype=bool) for x in classify(inst))
        false_in, false_out = int((sub & ~true_sub).sum()), int((true_sup & ~sup).sum())
        unsound += (false_in + false_out) > 0
        recall = (sub & true_sub).sum() / max(true_sub.sum(), 1)
        recalls.append(recall)
        print(f"{path}: subset recall {recall:.3f}  false-in {false_in}  false-out {false_out}")
    print(f"mean subset_recall {np.mean(recalls):.4f} over {len(recalls)} instances; "
          f"unsound on {unsound} (any unsound instance scores 0 in eval)")


if __name__ == "__main__":
    main()
