"""The flip_accuracy_estimate tool: load the model and data, run the suite, report JSON."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from methods._data import load_npz
from methods.entropy_enigma.adapt import batchnorm_layers, e0_threshold
from methods.entropy_enigma.flips import authors_accuracy, fit_flips_to_acc
from methods.entropy_enigma.model import DigitsBNMLP, builtin_source_model
from methods.entropy_enigma.suite import (
    ShiftSet,
    builtin_shift_sets,
    flip_table,
    loco_summary,
)
from methods.entropy_enigma.tools import FlipArgs

CACHE = "entropy_enigma_source_seed0.pt"


def _load_model(args: FlipArgs) -> tuple[nn.Module, str | None]:
    """The model to study; the built-in one is trained once and cached in the working dir."""
    if args.model is None:
        model: nn.Module = DigitsBNMLP()
    else:
        module_name, _, attr = args.model.partition(":")
        if not attr:
            raise ValueError("model: expected 'pkg.module:Name'")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"model: cannot import {args.model}: {err}") from err
        model = factory()
        if not isinstance(model, nn.Module):
            raise ValueError(f"model: {args.model}() is not a torch nn.Module")
    if not batchnorm_layers(model):
        raise ValueError("model: contains no BatchNorm layer")
    if args.checkpoint is not None:
        path = Path(args.checkpoint)
        if not path.exists():
            raise FileNotFoundError(f"checkpoint: no such file {args.checkpoint}")
        model.load_state_dict(torch.load(path, weights_only=True))
        return model.eval(), None
    if args.model is not None:
        raise ValueError("checkpoint: required with a custom model")
    cache = Path(CACHE)
    if cache.exists():
        try:
            model.load_state_dict(torch.load(cache, weights_only=True))
            return model.eval(), str(cache)
        except Exception:  # noqa: BLE001 - a stale or broken cache is simply rebuilt
            pass
    print("training the built-in source model (seed 0)...", file=sys.stderr)
    model = builtin_source_model(0)
    torch.save(model.state_dict(), cache)
    return model, str(cache)


def _load_sets(args: FlipArgs) -> list[ShiftSet]:
    if args.data == "digits_shifts":
        shifts = None if args.shifts == "all" else [(s.kind, s.severity) for s in args.shifts]
        return builtin_shift_sets(shifts)
    d = load_npz(args.data, "data", required=("X",), optional=("y",))
    x = np.asarray(d["X"], dtype=np.float32)
    y = np.asarray(d["y"]) if "y" in d else None
    return [ShiftSet(None, None, x, y)]


def flip_accuracy_estimate(args: FlipArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    model, cache = _load_model(args)
    sets = _load_sets(args)
    em = args.model_dump(include={"steps", "lr", "batch_size", "momentum", "eata_filter", "e0_frac",
                                  "d_margin", "reset_every", "reset_clears_p_bar", "reference", "eval_batch",
                                  "seed"})
    with torch.no_grad():
        n_classes = model.eval()(torch.as_tensor(sets[0].x[:2])).shape[1]
    rows = flip_table(model, sets, **em)
    labelled = all(r["true_acc"] is not None for r in rows)
    mae = corr = None
    warned: list[str] = []
    if args.calibration is not None:
        d = load_npz(args.calibration, "calibration", required=("features", "accs"))
        coef = fit_flips_to_acc(d["features"], d["accs"], 2)
        for r in rows:
            r["est_acc"] = float(np.polyval(coef, r["weighted_flips"]))
    elif args.fit == "authors":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for r, s in zip(rows, sets):
                r["est_acc"] = authors_accuracy(r["weighted_flips_1000"], len(s.x))
        warned = sorted({str(w.message) for w in caught})
    elif args.fit == "loco" and labelled and len({r["kind"] for r in rows}) > 1 and len(rows) >= 4:
        summary = loco_summary(rows)
        for r, e in zip(rows, summary["est_acc"]):
            r["est_acc"] = float(e)
        mae, corr = summary["mae"], summary["corr"]
    else:
        for r in rows:
            r["est_acc"] = None
    if labelled and mae is None and len(rows) >= 3 and args.fit != "none":
        acc = np.array([r["true_acc"] for r in rows])
        est = np.array([r["est_acc"] if r["est_acc"] is not None else np.nan for r in rows])
        if np.isfinite(est).all():
            mae = {"weighted_flips": float(100 * np.abs(est - acc).mean())}
    config = args.model_dump(mode="json")
    config.update(e0=e0_threshold(n_classes, args.e0_frac), n_classes=n_classes, source_cache=cache)
    return {
        "per_shift": rows,
        "mae": mae,
        "corr": corr,
        "n_images": int(sum(len(s.x) for s in sets)),
        "warnings": warned,
        "config": config,
    }
