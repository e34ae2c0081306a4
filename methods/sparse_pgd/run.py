"""The tool functions: argument models in, JSON-able reports out, arrays to npz files."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from methods.sparse_pgd.data import load_dataset
from methods.sparse_pgd.evaluate import AttackConfig, l0_pixels, predict, run_attack
from methods.sparse_pgd.models import load_model
from methods.sparse_pgd.tools import AdvTrainArgs, AttackArgs
from methods.sparse_pgd.training import adversarial_train


def attack_tool(args: AttackArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    X, y = load_dataset(args.data, split="test")
    model = load_model(args.model, args.checkpoint, args.model_kwargs).eval()
    if args.l0_budget >= X.shape[2] * X.shape[3]:
        raise ValueError(f"l0_budget: must be below the number of pixels ({X.shape[2] * X.shape[3]})")
    cfg = AttackConfig(
        k=args.l0_budget,
        iters=args.steps,
        rs_queries=args.rs_queries,
        eps=args.linf_bound,
        alpha=args.alpha,
        beta=args.beta,
        patience=args.patience,
        loss=args.loss,
        seed=args.seed,
        batch_size=args.batch_size,
    )
    result = run_attack(model, X, y, args.method, cfg)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, x_adv=result.x_adv.numpy(), success=result.success.numpy())
    return {
        "robust_acc": result.robust_acc,
        "clean_acc": float((predict(model, X) == y).float().mean()),
        "n": len(X),
        "success_mask_npz": str(out),
        "per_stage_survivors": result.stages,
        "max_l0": int(l0_pixels(result.x_adv, X).max()),
        "seconds": round(time.perf_counter() - start, 3),
        "config": args.model_dump(),
    }


def train_tool(args: AdvTrainArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    X, y = load_dataset(args.data, split="train")
    X_te, y_te = load_dataset(args.test_data, split="test")
    model = load_model(args.model, args.checkpoint, args.model_kwargs)
    log = adversarial_train(
        model,
        X,
        y,
        recipe=args.recipe,
        k_train=args.train_l0_budget,
        attack_iters=args.attack_steps,
        train_mode=args.train_mode,
        beta_trades=args.beta_trades,
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        seed=args.seed,
        verbose=True,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out)
    robust = run_attack(model, X_te, y_te, "spgd_ens", AttackConfig(k=args.eval_l0_budget, seed=args.seed))
    return {
        "checkpoint": str(out),
        "clean_acc": float((predict(model, X_te) == y_te).float().mean()),
        "robust_acc_spgd_ens": robust.robust_acc,
        "eval_k": args.eval_l0_budget,
        "epoch_log": log,
        "seconds": round(time.perf_counter() - start, 3),
        "config": args.model_dump(),
    }
