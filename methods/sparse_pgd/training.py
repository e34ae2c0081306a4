"""Adversarial training against sPGD: sAT and sTRADES (the authors' ``trainer.py``).

Each batch draws the projected or unprojected sPGD variant with probability 1/2
(``train_mode="rand"``); the model is in eval mode while attacked and in train mode for the
update. The paper trains with k_train = 6x the evaluation k; the CPU default here is
k_train = 5 for evaluation at k = 3.

sTRADES is marked **[unverified]**: the inner attack here maximises CE (the same sPGD as sAT),
the outer loss is CE(f(x), y) + beta_T * KL(p_clean || p_adv) in the TRADES direction
(sum p_clean log(p_clean / p_adv)), and beta_T = 6.0 is the TRADES default, not a value read
from the sPGD repository.
"""

from __future__ import annotations

import sys
from typing import Literal

import torch
from torch import nn

from methods.sparse_pgd.spgd import spgd_batch
from methods.sparse_pgd.streams import SampleStreams, tag

Recipe = Literal["sat", "strades"]
TrainMode = Literal["rand", "proj", "unproj"]


def sparse_adversarial_examples(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    streams: SampleStreams,
    *,
    iters: int,
    projected: bool,
) -> torch.Tensor:
    """sPGD examples for a training batch, with the model switched to eval mode meanwhile."""
    was_training = model.training
    model.eval()
    x_adv, _ = spgd_batch(model, x, y, k, streams, iters=iters, projected=projected)
    model.train(was_training)
    return x_adv


def trades_loss(logits_clean: torch.Tensor, logits_adv: torch.Tensor, y: torch.Tensor, beta: float) -> torch.Tensor:
    """CE(clean) + beta * KL(p_clean || p_adv), batch-mean."""
    log_p_clean = torch.log_softmax(logits_clean, dim=1)
    log_p_adv = torch.log_softmax(logits_adv, dim=1)
    kl = (log_p_clean.exp() * (log_p_clean - log_p_adv)).sum(dim=1).mean()
    return nn.functional.cross_entropy(logits_clean, y) + beta * kl


def adversarial_train(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    recipe: Recipe = "sat",
    k_train: int = 5,
    attack_iters: int = 10,
    train_mode: TrainMode = "rand",
    beta_trades: float = 6.0,
    epochs: int = 30,
    lr: float = 1e-3,
    batch_size: int = 64,
    seed: int = 0,
    verbose: bool = False,
) -> list[dict[str, float]]:
    """Train ``model`` in place; returns one {epoch, loss, train_acc} record per epoch."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    log: list[dict[str, float]] = []
    for epoch in range(epochs):
        perm = torch.randperm(len(X), generator=gen)
        total, correct, seen = 0.0, 0, 0
        for start in range(0, len(X), batch_size):
            idx = perm[start : start + batch_size]
            xb, yb = X[idx], y[idx]
            if train_mode == "rand":
                projected = bool(torch.rand((), generator=gen) < 0.5)
            else:
                projected = train_mode == "proj"
            streams = SampleStreams(tag(seed, epoch), idx)
            x_adv = sparse_adversarial_examples(
                model, xb, yb, k_train, streams, iters=attack_iters, projected=projected
            )
            model.train()
            logits_adv = model(x_adv)
            if recipe == "sat":
                loss = nn.functional.cross_entropy(logits_adv, yb)
            elif recipe == "strades":
                loss = trades_loss(model(xb), logits_adv, yb, beta_trades)
            else:
                raise ValueError(f"recipe: unknown recipe {recipe!r}")
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            correct += int((logits_adv.argmax(dim=1) == yb).sum())
            seen += len(idx)
        rec = {"epoch": epoch + 1, "loss": total / seen, "adv_train_acc": correct / seen}
        log.append(rec)
        if verbose:
            print(f"epoch {epoch + 1}: loss {rec['loss']:.4f} adv acc {rec['adv_train_acc']:.3f}", file=sys.stderr)
    model.eval()
    return log
