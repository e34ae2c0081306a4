"""Accuracies per group, correlations, last-layer retraining (LLR) and the probes."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from methods.spurious_boolean.data import Batch
from methods.spurious_boolean.model import Net

GROUP_KEYS = {3: "y+s+", 2: "y+s-", 1: "y-s+", 0: "y-s-"}


def evaluate(logits: torch.Tensor, batch: Batch) -> dict[str, object]:
    """avg/worst-group/pooled-minority accuracy, per-group accuracy and the two correlations."""
    pred = torch.where(logits > 0, 1.0, -1.0)
    correct = (pred == batch.y).float()
    groups = batch.group
    group_acc = {}
    for g, key in GROUP_KEYS.items():
        sel = groups == g
        group_acc[key] = float(correct[sel].mean()) if bool(sel.any()) else None
    present = [v for v in group_acc.values() if v is not None]
    minority = batch.y != batch.y_spur
    return {
        "avg_acc": float(correct.mean()),
        "worst_group_acc": min(present),
        "minority_acc": float(correct[minority].mean()) if bool(minority.any()) else None,
        "group_acc": group_acc,
        "corr_core": float((torch.sign(logits) * batch.y).mean()),
        "corr_spur": float((torch.sign(logits) * batch.y_spur).mean()),
    }


def _fit_logistic(features: torch.Tensor, target: torch.Tensor, C: float) -> LogisticRegression:
    clf = LogisticRegression(C=C, solver="lbfgs", max_iter=2000)
    clf.fit(features.double().numpy(), (target > 0).numpy().astype(int))
    return clf


def last_layer_retrain(net: Net, x: torch.Tensor, y: torch.Tensor, C: float = 1.0) -> Net:
    """Replace the last layer by an ℓ₂-regularised logistic regression on the frozen features.

    Needs labels only, no group labels. The hidden layer (W₁, b₁) is untouched; a retrained copy
    of the net is returned.
    """
    with torch.no_grad():
        feats = net.features(x)
    clf = _fit_logistic(feats, y, C)
    new = Net(net.hidden.in_features, net.hidden.out_features)
    new.load_state_dict(net.state_dict())
    with torch.no_grad():
        new.out.weight.copy_(torch.as_tensor(clf.coef_, dtype=torch.float32))
        new.out.bias.copy_(torch.as_tensor(clf.intercept_, dtype=torch.float32))
    return new


def spur_probe_acc(net: Net, fit_on: Batch, test: Batch, C: float = 1.0) -> float:
    """Accuracy of a logistic probe for y_s on the hidden features ("not forgotten")."""
    with torch.no_grad():
        clf = _fit_logistic(net.features(fit_on.x), fit_on.y_spur, C)
        pred = clf.predict(net.features(test.x).double().numpy())
    return float(np.mean(pred == (test.y_spur > 0).numpy().astype(int)))


def unit_split(net: Net, n_core: int) -> dict[str, float]:
    """Fractions of hidden units whose first-layer ℓ₁ mass is ≥ 80% core / ≤ 20% core."""
    w = net.hidden.weight.detach().abs()
    rho = w[:, :n_core].sum(1) / w.sum(1).clamp_min(1e-12)
    return {"core_units": float((rho >= 0.8).float().mean()), "spur_units": float((rho <= 0.2).float().mean())}
