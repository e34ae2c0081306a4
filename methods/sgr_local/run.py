"""The ``local_learning_train`` tool."""

from __future__ import annotations

import functools
import sys
from typing import Any

import torch

from methods.sgr_local.data import load_digits_split, load_npz_split
from methods.sgr_local.model import LocalNet
from methods.sgr_local.rules import local_rule, sgr_rule
from methods.sgr_local.tools import LocalLearningTrainArgs
from methods.sgr_local.training import TrainConfig, grad_cosines, measure_bp_saved_bytes, train


def local_learning_train(args: LocalLearningTrainArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    split = load_digits_split() if args.data == "digits" else load_npz_split(args.data)
    model = LocalNet(split.n_features, args.width, args.depth, split.n_classes,
                     residual=args.bp_residual, seed=args.seed)
    cfg = TrainConfig(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                      seed=args.seed, measure_memory=args.measure_memory)
    rule = {"bp": None, "local": local_rule,
            "sgr": functools.partial(sgr_rule, lam=args.sgr_weight, distance=args.distance)}[args.method]
    bp_bytes = None
    if args.measure_memory:  # same shapes as the first training batch, before any update
        first = torch.randperm(len(split.y_train),
                               generator=torch.Generator().manual_seed(args.seed))
        first = first[:args.batch_size]
        bp_bytes = measure_bp_saved_bytes(model, split.X_train[first], split.y_train[first])

    def progress(epoch: int, log: dict[str, float]) -> None:
        print(f"epoch {epoch}: " + ", ".join(f"{k}={v:.4f}" for k, v in log.items()
                                             if k != "epoch"), file=sys.stderr)

    result = train(model, split, cfg, rule, on_epoch=progress)
    cosines = None if rule is None else grad_cosines(model, split.X_test, split.y_test)
    report: dict[str, Any] = {
        "test_acc": result.test_acc,
        "train_acc": result.train_acc,
        "grad_cosine_per_boundary": cosines,
        "grad_cosine_mean": sum(cosines) / len(cosines) if cosines else None,
        "saved_bytes_peak": result.saved_bytes_peak,
        "saved_bytes_bp": bp_bytes,
        "saved_bytes_ratio": (result.saved_bytes_peak / bp_bytes
                              if bp_bytes and result.saved_bytes_peak is not None else None),
        "isolation_ok": result.isolation_ok,
        "epoch_log": result.epoch_log,
        "checkpoint": None,
        "config": args.model_dump(),
    }
    if args.out:
        torch.save({"state_dict": model.state_dict(), "config": args.model_dump()}, args.out)
        report["checkpoint"] = args.out
    return report
