"""The ``distill`` and ``evaluate_distilled`` tools: file I/O around the library."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from methods._data import load_npz
from methods.d3s.data import load_split
from methods.d3s.distill import DistillConfig, distill
from methods.d3s.models import accuracy
from methods.d3s.students import student_accuracies
from methods.d3s.teachers import load_or_train
from methods.d3s.tools import DistillArgs, EvaluateArgs


def run_distill(args: DistillArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    split = load_split(args.data)
    teachers = load_or_train(split, args.teacher_seeds, bn=args.teacher_bn, cache_dir=args.cache_dir)
    cfg = DistillConfig(
        ipc=args.ipc, method=args.method, steps=args.steps, lr=args.lr, lam_kl=args.lam_kl,
        lam_ce=args.lam_ce, features=args.features, proj_dim=args.proj_dim,
        eps_rel=args.eps_rel, soft_tau=args.soft_tau, init_seed=args.init_seed,
    )
    result = distill(split, teachers, cfg)
    config = args.model_dump()
    np.savez(
        args.out,
        X=result.X.numpy().astype(np.float32),
        y=result.y.numpy(),
        y_soft=result.y_soft.numpy().astype(np.float32),
        meta=np.array(json.dumps({"config": config, "init_index": result.init_index.tolist()})),
    )
    test_acc = None
    if split.X_test is not None:
        test_acc = [accuracy(t, split.X_test, split.y_test) for t in teachers]
    return {
        "config": config,
        "out": str(Path(args.out)),
        "n_images": int(result.X.shape[0]),
        "teacher_test_acc": test_acc,
        "kl_init": result.kl_init,
        "kl_final": result.kl_final,
        "ce_final": result.ce_final,
        "loss_curve": result.loss_curve,
        "pixel_min": float(result.X.min()),
        "pixel_max": float(result.X.max()),
        "seconds": time.perf_counter() - start,
    }


def load_distilled(path: str, labels: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(X, targets) from a distilled npz: int ``y`` for hard labels; ``y_soft`` (or ``Y``) for soft."""
    p = Path(path)
    z = load_npz(p, "path", required=("X",), optional=("y", "y_soft", "Y"))
    X = torch.as_tensor(z["X"], dtype=torch.float32)
    if labels == "soft":
        key = "y_soft" if "y_soft" in z else "Y" if "Y" in z else None
        if key is None:
            raise ValueError(f"labels: {p} has no y_soft (or Y) for soft labels")
        targets = torch.as_tensor(z[key], dtype=torch.float32)
    elif "y" in z:
        targets = torch.as_tensor(z["y"], dtype=torch.int64)
    elif "Y" in z:
        targets = torch.as_tensor(z["Y"]).argmax(1)
    else:
        raise ValueError(f"labels: {p} has no y (or Y) for hard labels")
    if X.ndim != 2 or X.shape[1] != 64 or targets.shape[0] != X.shape[0]:
        raise ValueError(f"path: X must be (n, 64) with one label row per image, got {tuple(X.shape)}")
    return X, targets


def run_evaluate(args: EvaluateArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    X, targets = load_distilled(args.path, args.labels)
    split = load_split(args.data)
    has_test = split.X_test is not None
    X_eval, y_eval = (split.X_test, split.y_test) if has_test else (split.X_train, split.y_train)
    extra = (split.X_train, split.y_train) if args.train_acc else (None, None)
    accs, train_accs = student_accuracies(
        X, targets, X_eval, y_eval, args.student_seeds, args.epochs, args.lr, *extra
    )
    n = len(accs)
    mean = sum(accs) / n
    se = math.sqrt(sum((a - mean) ** 2 for a in accs) / (n - 1) / n) if n > 1 else 0.0
    return {
        "config": args.model_dump(),
        "label_mode": args.labels,
        "scored_on": "test" if has_test else "train",
        "acc_mean": mean,
        "acc_se": se,
        "acc_per_seed": accs,
        "train_acc_mean": None if train_accs is None else sum(train_accs) / n,
        "n_images": int(X.shape[0]),
        "seconds": time.perf_counter() - start,
    }
