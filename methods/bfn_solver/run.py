"""The ``bfn_sample`` tool: one sampler run, its Fréchet distance and the noise floor."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from methods.bfn_solver.fd import frechet_distance
from methods.bfn_solver.gmm import GMMOracle, digits_gmm
from methods.bfn_solver.mlp import MLPDenoiser, load_eps_net, train_eps_net
from methods.bfn_solver.samplers import CountingDenoiser, sample
from methods.bfn_solver.tools import SampleArgs

REFERENCE_SEED = 123_456
FLOOR_SEED = 654_321


def sample_tool(args: SampleArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    net_path = args.denoiser.split(":", 1)[1] if args.denoiser.startswith("mlp:") else None
    saved = load_eps_net(net_path) if net_path not in (None, "train") else None  # fail fast on a bad path
    gmm = digits_gmm()
    if net_path is None:
        base = GMMOracle(gmm, args.sigma1_sq)
    else:
        net = saved if saved is not None else train_eps_net(gmm, sigma1_sq=args.sigma1_sq, seed=args.seed)
        base = MLPDenoiser(net, args.sigma1_sq)
    denoise = CountingDenoiser(base)
    x = sample(
        denoise, args.sampler, args.n_samples, gmm.dim, args.nfe, np.random.default_rng(args.seed),
        eta=args.eta, sigma1_sq=args.sigma1_sq, init=args.init, last_drop=args.last_drop,
        data_mean=gmm.mean, data_var=float(np.trace(gmm.covariance)) / gmm.dim,
    )
    if denoise.calls != args.nfe:
        raise RuntimeError(f"the sampler made {denoise.calls} denoiser calls, not {args.nfe}")
    reference = gmm.sample(args.n_samples, np.random.default_rng(REFERENCE_SEED))
    floor = frechet_distance(gmm.sample(args.n_samples, np.random.default_rng(FLOOR_SEED)), reference)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, samples=x)
    return {
        "samples_npz": str(out),
        "fd": frechet_distance(x, reference),
        "fd_floor": floor,
        "nfe": denoise.calls,
        "sampler": args.sampler,
        "denoiser": args.denoiser,
        "n": args.n_samples,
        "grid": denoise.times,  # the t of every denoiser call
        "seconds": round(time.perf_counter() - start, 3),
    }
