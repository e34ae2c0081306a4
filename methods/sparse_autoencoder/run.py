"""The ``sparse_ae_compress`` tool."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import torch

from methods.sparse_autoencoder.codec import (
    gaussian_benchmark,
    identity_closed_form,
    row_gram_offdiag,
    row_max_entry,
)
from methods.sparse_autoencoder.data import generator
from methods.sparse_autoencoder.decoders import bussgang_fit, denoise, mse, refit_linear
from methods.sparse_autoencoder.tools import SparseAECompressArgs
from methods.sparse_autoencoder.training import (
    initial_decoder,
    initial_encoder,
    train_population,
    train_surrogate,
)

# random streams (data.generator): 1 init, 11/12 training, 2 refit, 3 Bussgang fit, 4 test,
# 5/6 baseline refits, 7 baseline rotation
STREAM_INIT, STREAM_REFIT, STREAM_FIT, STREAM_TEST = 1, 2, 3, 4
SURROGATE_LR = 3e-2  # calibrated: 1e-2 (cosine) had not localised at p = 0.8


def _refit_mse(B, args: SparseAECompressArgs, stream: int) -> float:
    A = refit_linear(B, args.source, args.p, args.n_refit, generator(args.seed, stream))
    return mse(B, lambda Z: Z @ A.T, args.source, args.p, args.n_test,
               generator(args.seed, STREAM_TEST))


def sparse_ae_compress(args: SparseAECompressArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    d, n = args.d, round(args.rate * args.d)
    init_gen = generator(args.seed, STREAM_INIT)
    B = initial_encoder(args.encoder_init, n, d, init_gen)
    A = initial_decoder(n, d, init_gen)

    def log(step: int, loss: float) -> None:
        if step % 50 == 0:
            print(f"step {step}: loss {loss:.5f}", file=sys.stderr)

    history: list[float] = []
    steps, lr = args.steps, args.lr
    if args.train == "population":
        steps, lr = steps if steps is not None else 300, lr or 2e-2
        B, A, history = train_population(B, A, args.p, steps, lr, args.masks_per_step,
                                         args.seed, log)
    elif args.train == "surrogate":
        steps, lr = steps if steps is not None else 1500, lr or SURROGATE_LR
        B, A, history = train_surrogate(B, A, args.source, args.p, steps, lr, args.batch_size,
                                        args.beta_start, args.beta_end, args.seed, log)
    else:
        A = math.sqrt(2.0 / math.pi) * (B / B.norm(dim=1, keepdim=True)).T
    refit = args.refit if args.refit is not None else args.train == "surrogate"
    if refit:
        A = refit_linear(B, args.source, args.p, args.n_refit, generator(args.seed, STREAM_REFIT))

    mse_linear = mse(B, lambda Z: Z @ A.T, args.source, args.p, args.n_test,
                     generator(args.seed, STREAM_TEST))
    bussgang, mse_denoiser = None, None
    if args.decoder == "denoiser":
        bussgang = bussgang_fit(A, B, args.source, args.p, args.n_fit,
                                generator(args.seed, STREAM_FIT))
        mse_denoiser = mse(
            B, lambda Z: denoise(Z @ A.T, args.source, args.p, bussgang["c"], bussgang["sigma2"]),
            args.source, args.p, args.n_test, generator(args.seed, STREAM_TEST))
    mse_identity = mse_rotation = None
    if args.baselines:
        if n == d:
            mse_identity = _refit_mse(torch.eye(d, dtype=B.dtype), args, 5)
        rotation = initial_encoder("rotation", n, d, generator(args.seed, 7))
        mse_rotation = _refit_mse(rotation, args, 6)
    np.savez(args.out, B=B.numpy(), A=A.numpy())
    config = args.model_dump() | {"refit": refit, "steps": steps, "lr": lr}
    return {
        "mse": mse_denoiser if args.decoder == "denoiser" else mse_linear,
        "mse_linear": mse_linear,
        "mse_denoiser": mse_denoiser,
        "gaussian_benchmark": gaussian_benchmark(n / d),
        "identity_closed_form": identity_closed_form(args.source, args.p),
        "mse_identity": mse_identity,
        "mse_rotation": mse_rotation,
        "row_max_entry": row_max_entry(B),
        "row_gram_offdiag": row_gram_offdiag(B),
        "bussgang": bussgang,
        "n_bits": n,
        "weights_npz": args.out,
        "loss_log": history,
        "config": config,
    }
