"""Score a sparse-robustness submission: robust accuracy under a fixed sAA at k = 3.

The held-out images are rebuilt here from scikit-learn's bundled digits (70/30 stratified,
seed 0) and put through the task's secret pixel permutation, the same one prepare.py applies to
the training data, so the bundled copy cannot be matched to the held-out labels. The 540
held-out images are cut into the three private splits (:func:`split_members`, stratified by
label, fixed by ``HELDOUT_SPLIT_SEED``): ``test`` 300 (``score``), ``search`` 120
(``search_score``) and ``select`` 120 (``select_score``); the digits cannot grow.
Two phases (``environments/submission.py``): ``produce.py`` exports the actor's Net + model.pt
as a graph of ATen ops; this loads it with ``load_exported_module`` (pure allow-listed ops only)
and attacks it, gradients included. No code of the submission's runs in this process.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

from methods._exported import ExportedProgramError, TensorSpec, batched, load_exported_module

K = 3
SAA_ITERS = 100
SAA_QUERIES = 1000
ATTACK_SEED = 20240721
_SECRET_PERMUTATION_SEED = 918273645
MIN_CLEAN_ACC = 0.90
MAX_PARAMS = 250_000
CPU_BUDGET_S = 60.0


def secret_permutation() -> np.ndarray:
    return np.random.default_rng(_SECRET_PERMUTATION_SEED).permutation(64)


def permute_pixels(X: np.ndarray) -> np.ndarray:
    """(N, 1, 8, 8) -> the same images with pixels in the secret order."""
    return X.reshape(len(X), -1)[:, secret_permutation()].reshape(X.shape)


HELDOUT_SPLIT_SEED = 38
SIZES = {"search": 120, "select": 120}  # test: the other 300 of the 540 held-out images


def split_members(which: str) -> list[int]:
    """Positions, among the 540 held-out images, of a private split's images (stratified)."""
    from sklearn.model_selection import train_test_split

    from methods.sparse_pgd.data import digits_split

    y = digits_split()[3]
    rest, search = train_test_split(np.arange(len(y)), test_size=SIZES["search"], stratify=y,
                                    random_state=HELDOUT_SPLIT_SEED)
    test, select = train_test_split(rest, test_size=SIZES["select"], stratify=y[rest],
                                    random_state=HELDOUT_SPLIT_SEED)
    return sorted(int(i) for i in {"search": search, "select": select, "test": test}[which])


def split(which: str) -> tuple[np.ndarray, np.ndarray]:
    """``train`` (the actor's data) or a private split's images, pixels permuted."""
    from methods.sparse_pgd.data import digits_split

    X_tr, y_tr, X_te, y_te = digits_split()
    if which == "train":
        X, y = X_tr, y_tr
    else:
        members = split_members(which)
        X, y = X_te[members], y_te[members]
    return permute_pixels(X).astype(np.float32), y


BATCH = 64  # produce.py's export batch


def _load_model(folder: Path) -> torch.nn.Module:
    graph = load_exported_module(folder, "model", (torch.zeros(BATCH, 1, 8, 8),),
                                 [TensorSpec(shape=(BATCH, 10), dtype="float32")])
    return batched(graph, BATCH).eval()


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, which: str) -> float:
    from methods.sparse_pgd.evaluate import AttackConfig, run_attack

    torch.set_num_threads(1)
    cpu_start = time.process_time()
    try:
        model = _load_model(Path(outputs))
    except ExportedProgramError as err:
        print(f"gate: {err}")
        return 0.0
    n_params = sum(p.numel() for p in model.parameters())
    if n_params > MAX_PARAMS:
        print(f"gate: {n_params} parameters > {MAX_PARAMS}")
        return 0.0
    X_np, y_np = split(which)
    X, y = torch.from_numpy(X_np), torch.from_numpy(y_np)
    with torch.no_grad():
        logits = model(X)
        again = model(X)
    if tuple(logits.shape) != (len(X), 10):
        print(f"gate: output shape {tuple(logits.shape)} is not (N, 10)")
        return 0.0
    if not torch.equal(logits, again):
        print("gate: the forward pass is not deterministic")
        return 0.0
    clean_acc = float((logits.argmax(1) == y).float().mean())
    if clean_acc < MIN_CLEAN_ACC:
        print(f"gate: clean accuracy {clean_acc:.3f} < {MIN_CLEAN_ACC}")
        return 0.0
    cfg = AttackConfig(k=K, iters=SAA_ITERS, rs_queries=SAA_QUERIES, seed=ATTACK_SEED)
    result = run_attack(model, X, y, "saa", cfg)
    cpu = time.process_time() - cpu_start
    if cpu > CPU_BUDGET_S:
        print(f"gate: evaluation took {cpu:.0f} s of CPU > {CPU_BUDGET_S:.0f} s")
        return 0.0
    print(f"clean_acc {clean_acc:.4f} robust_acc_k3 {result.robust_acc:.4f} survivors {result.stages}")
    return result.robust_acc


if __name__ == "__main__":
    print(score(sys.argv[1] if len(sys.argv) > 1 else "."))
