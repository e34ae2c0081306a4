"""The ``ln_capacity`` and ``ln_construct`` tools."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from methods._data import load_npz
from methods.ln_net.capacity import fit_random_labels, random_labels
from methods.ln_net.construction import construct, forward_construction
from methods.ln_net.scatter import lssr
from methods.ln_net.tools import LNCapacityArgs, LNConstructArgs


def _load_xy(path: str, binary: bool) -> tuple[np.ndarray, np.ndarray]:
    f = load_npz(path, "data", required=("X", "y"))
    X, y = f["X"].astype(np.float64), f["y"]
    if X.ndim != 2 or y.shape != (len(X),) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError("data: X must be (m, d) and y (m,) integer labels")
    if y.min() < 0:
        raise ValueError("data: labels must be non-negative")
    if binary and not set(np.unique(y)) <= {0, 1}:
        raise ValueError("data: labels must be binary (0/1) for ln_construct")
    return X, y.astype(np.int64)


def ln_capacity(args: LNCapacityArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    if args.data == "gaussian":
        X, y = random_labels(args.n_points, args.d, args.n_classes, args.data_seed)
    else:
        Xn, yn = _load_xy(args.data, binary=False)
        X, y = torch.as_tensor(Xn, dtype=torch.float32), torch.as_tensor(yn)
    common = dict(width=args.width, depth=args.depth, steps=args.steps, lr=args.lr,
                  eps=args.norm_eps, seed=args.seed)
    fit = fit_random_labels(X, y, groups=args.groups, **common)
    linear = (fit_random_labels(X, y, groups=0, **common)
              if args.compare_linear and args.groups > 0 else None)
    warnings = list(fit.warnings)
    return {
        "train_acc": fit.train_acc,
        "linear_acc": (fit.train_acc if args.groups == 0 and args.compare_linear
                       else linear.train_acc if linear else None),
        "final_loss": fit.final_loss,
        "n_params": fit.n_params,
        "group_size": args.width // args.groups if args.groups else None,
        "lssr_input": lssr(X.double().numpy(), y.numpy()),
        "lssr_last_hidden": fit.lssr_last_hidden,
        "warnings": warnings,
        "config": args.model_dump(),
    }


def ln_construct(args: LNConstructArgs) -> dict[str, Any]:
    warnings = []
    if args.data == "gaussian":
        rng = np.random.default_rng([args.seed, 0])
        X = rng.normal(size=(args.n_points, args.d))
        y = rng.integers(0, 2, size=args.n_points)
        while len(np.unique(y)) < 2:
            y = rng.integers(0, 2, size=args.n_points)
    else:
        X, y = _load_xy(args.data, binary=True)
        if len(X) > 64:
            raise ValueError(f"m: at most 64 points, the npz has {len(X)}")
    m = len(X)
    if m > 32:
        warnings.append(f"m={m} > 32: cluster gaps shrink towards float64 resolution; the "
                        "search may fail or the logits may be tiny")
    net = construct(X, y, args.seed, args.merge_tries, args.embed_tries)
    logits = forward_construction(net, X)
    arrays = {"W0": net.W0, "b0": net.b0, "w_out": net.w_out, "b_out": np.float64(net.b_out)}
    for i, (W, b) in enumerate(zip(net.Ws, net.bs), start=1):
        arrays[f"W{i}"], arrays[f"b{i}"] = W, b
    np.savez(args.out, **arrays)
    return {
        "n_layers": net.n_layers,
        "width": 3,
        "train_acc": float(((logits > 0) == (y == 1)).mean()),
        "min_abs_logit": float(np.abs(logits).min()),
        "min_gap_per_layer": net.min_gap_per_layer,
        "weights_npz": args.out,
        "warnings": warnings,
        "config": args.model_dump(),
    }
