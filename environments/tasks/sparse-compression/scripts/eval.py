"""Score a workspace's model.pt + model.Decoder: test MSE on 50,000 private samples (lower is
better). eval computes z = sign(Bx) itself and gives the decoder z alone.

Three private splits (:data:`SPLIT_SEEDS`), each 50,000 samples of the source drawn from a
private seed of its own: ``score`` on ``test`` (the samples scored all along), ``search_score``
and ``select_score`` on theirs. The submission is the same for all three (B and the decoder).

Gates (each scores the worst value, +inf): B a finite (96, 96) tensor with no zero row; at most
10^6 decoder parameters; a deterministic decoder; at most 60 s for the whole evaluation.
Two phases (``environments/submission.py``): ``produce.py`` writes B and exports the decoder as a
graph of ATen ops; this loads it with ``load_exported_module`` (pure allow-listed ops only), so
no code of the submission's runs in this process.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from methods._exported import ExportedProgramError, TensorSpec, load_exported_module  # noqa: E402
from methods._submission import load_outputs  # noqa: E402
from methods.sparse_autoencoder.codec import encode  # noqa: E402
from methods.sparse_autoencoder.data import sample  # noqa: E402

P, D = 0.2, 96
N_TEST, CHUNK = 50_000, 10_000
PRIVATE_SEED = 918_273_645  # test's
SPLIT_SEEDS = {"test": PRIVATE_SEED, "search": 274_136_591, "select": 563_901_287}
MAX_PARAMS = 1_000_000
TIME_LIMIT_S = 60.0
WORST = math.inf


def _fail(reason: str) -> float:
    print(f"gate: {reason}")
    return WORST


def split_members(split: str) -> list[int]:
    """The seed of the generator that draws a split's 50,000 samples."""
    return [SPLIT_SEEDS[split]]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    start = time.perf_counter()
    folder = Path(outputs)
    torch.set_num_threads(1)
    B = torch.from_numpy(load_outputs(folder, "encoder")["B"])
    if B.shape != (D, D):
        return _fail("model.pt['B'] must be a (96, 96) tensor")
    B = B.double()
    if not torch.isfinite(B).all() or bool((B.abs().sum(dim=1) == 0).any()):
        return _fail("B must be finite with no zero row (96 bits)")
    try:
        decoder = load_exported_module(folder, "decoder", (torch.ones(CHUNK, D),),
                                       [TensorSpec(shape=(CHUNK, D), dtype="float32")])
    except ExportedProgramError as err:
        return _fail(str(err))
    n_params = sum(p.numel() for p in decoder.parameters())
    if n_params > MAX_PARAMS:
        return _fail(f"the decoder has {n_params} parameters (limit {MAX_PARAMS})")
    gen = torch.Generator().manual_seed(SPLIT_SEEDS[split])
    total = 0.0
    for done in range(0, N_TEST, CHUNK):
        X = sample("bg", P, CHUNK, D, gen)
        Z = encode(B, X).float()
        with torch.no_grad():
            X_hat = decoder(Z)
            if done == 0 and not torch.equal(X_hat, decoder(Z.clone())):
                return _fail("the decoder is not deterministic")
        if X_hat.shape != X.shape or not torch.isfinite(X_hat).all():
            return _fail("the decoder must return finite (N, 96) outputs")
        total += float(((X - X_hat.double()) ** 2).sum())
        if time.perf_counter() - start > TIME_LIMIT_S:
            return _fail(f"evaluation took more than {TIME_LIMIT_S:.0f} s")
    mse = total / (N_TEST * D)
    print(f"test_mse {mse:.5f} on {N_TEST} private samples ({split})")
    return mse


if __name__ == "__main__":
    print(score(sys.argv[1] if len(sys.argv) > 1 else "."))
