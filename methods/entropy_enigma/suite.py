"""The CPU-scale protocol: flips on labelled shifted sets, LOCO fits, MAE and correlations."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from methods.entropy_enigma.data import all_shifts, apply_shift, load_digits_split
from methods.entropy_enigma.flips import FlipStats, estimate_flips_many, loco_predictions


@dataclass
class ShiftSet:
    kind: str | None
    severity: int | None
    x: np.ndarray
    y: np.ndarray | None


def builtin_shift_sets(shifts: list[tuple[str, int]] | None = None) -> list[ShiftSet]:
    split = load_digits_split()
    return [ShiftSet(k, s, apply_shift(split.x_test, k, s), split.y_test) for k, s in (shifts or all_shifts())]


@torch.no_grad()
def source_accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Accuracy of the un-adapted model as deployed (eval mode, running statistics)."""
    pred = model.eval()(torch.as_tensor(x, dtype=torch.float32)).argmax(dim=1).numpy()
    return float((pred == np.asarray(y)).mean())


def flip_table(model: nn.Module, sets: list[ShiftSet], **em_args: Any) -> list[dict[str, Any]]:
    all_stats: list[FlipStats] = estimate_flips_many(model, [s.x for s in sets], **em_args)
    rows = []
    for s, stats in zip(sets, all_stats):
        row = {"kind": s.kind, "severity": s.severity,
               "true_acc": None if s.y is None else source_accuracy(model, s.x, s.y)}
        row.update({k: v for k, v in asdict(stats).items() if k != "n_images"})
        rows.append(row)
    return rows


def loco_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """MAE in accuracy points of each label-free predictor, leave-one-corruption-out."""
    acc = np.array([r["true_acc"] for r in rows])
    groups = [str(r["kind"]) for r in rows]
    wf = np.array([r["weighted_flips"] for r in rows])
    fl = np.array([r["flips"] for r in rows])
    conf = np.array([r["avg_conf"] for r in rows])
    preds = {
        "weighted_flips": loco_predictions(wf, acc, groups, 2),
        "flips": loco_predictions(fl, acc, groups, 2),
        "avg_conf_fitted": loco_predictions(conf, acc, groups, 1),
        "avg_conf_raw": conf,
    }
    mae = {k: float(100 * np.abs(p - acc).mean()) for k, p in preds.items()}

    def corr(a: np.ndarray) -> float:
        return float(np.corrcoef(acc, a)[0, 1]) if np.std(a) > 0 else float("nan")

    return {
        "mae": mae,
        "corr": {"acc_flips": corr(fl), "acc_weighted_flips": corr(wf), "acc_avg_conf": corr(conf)},
        "est_acc": preds["weighted_flips"],
    }
