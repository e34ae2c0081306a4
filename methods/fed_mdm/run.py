"""The fit_mdm and partition_mdm tools: file I/O and reports around the pure library."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from methods._data import digits, load_npz
from methods.fed_mdm.dm import mixture_loglik
from methods.fed_mdm.em import fit_mdm
from methods.fed_mdm.partition import (
    counts_to_proportions,
    energy_distance,
    label_proportions,
    partition_by_mdm,
    resample_sizes,
    sizes_from_hist,
)
from methods.fed_mdm.synthetic import synthetic_split
from methods.fed_mdm.tools import FitArgs, PartitionArgs, SyntheticArgs


def load_counts(path: str, field: str = "counts") -> np.ndarray:
    counts = np.asarray(load_npz(path, field, required=("counts",))["counts"])
    if counts.ndim != 2 or not np.issubdtype(counts.dtype, np.number):
        raise ValueError(f"{field}: `counts` must be a 2-D numeric array")
    return counts


def _r(x: np.ndarray, d: int = 6) -> list:
    return np.round(np.asarray(x, dtype=float), d).tolist()


def run_fit(args: FitArgs) -> dict[str, Any]:
    truth = None
    heldout = None
    if args.counts is not None:
        train = load_counts(args.counts)
    else:
        syn = args.synthetic or SyntheticArgs()
        train, heldout, truth = synthetic_split(syn.n_train, syn.n_test, syn.n_min, syn.n_max, syn.seed)
    if args.heldout is not None:
        heldout = load_counts(args.heldout, "heldout")
        if heldout.shape[1] != train.shape[1]:
            raise ValueError("heldout: must have as many classes as counts")
    print(f"fit_mdm: {len(train)} clients, K={args.n_components}, {args.steps} iterations", file=sys.stderr)
    res = fit_mdm(train, args.n_components, iters=args.steps, init=args.init, init_seed=args.init_seed,
                  size_bins=args.size_bins, alpha_floor=args.alpha_floor, zero_rule=args.zero_rule,
                  dp_sigma=args.dp_sigma)
    p = res.params
    report: dict[str, Any] = {
        "phi": _r(p.phi),
        "alphas": _r(p.alphas),
        "size_hist": None if p.size_hist is None else _r(p.size_hist),
        "size_bins": args.size_bins,
        "train_ll_curve": [round(x, 6) for x in res.ll_curve[::10]],
        "train_ll": float(mixture_loglik(train, p.phi, p.alphas).mean()),
        "heldout_ll": None if heldout is None else float(mixture_loglik(heldout, p.phi, p.alphas).mean()),
        "true_ll": None if truth is None else float(mixture_loglik(heldout, truth.phi, truth.alphas).mean()),
        "monotone": res.monotone,
        "n_clients": int(len(train)),
        "config": args.model_dump(),
    }
    Path(args.out).write_text(json.dumps(report))
    report["model_path"] = args.out
    return report


def _load_labels(spec: str) -> np.ndarray:
    if spec == "digits":
        return digits()[1]
    labels = np.asarray(load_npz(spec, "data", required=("labels",))["labels"])
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or (labels < 0).any():
        raise ValueError("data: `labels` must be a 1-D array of non-negative ints")
    return labels


def run_partition(args: PartitionArgs) -> dict[str, Any]:
    model: dict[str, Any] = {}
    if args.fit_report is not None:
        if not Path(args.fit_report).exists():
            raise FileNotFoundError(f"fit_report: no such file {args.fit_report}")
        model = json.loads(Path(args.fit_report).read_text())
    phi = np.asarray(args.phi if args.phi is not None else model["phi"], float)
    alphas = np.asarray(args.alphas if args.alphas is not None else model["alphas"], float)
    if alphas.ndim != 2 or alphas.shape[0] != len(phi):
        raise ValueError("alphas: must be K x C with K = len(phi)")
    if (alphas <= 0).any() or (phi < 0).any() or phi.sum() <= 0:
        raise ValueError("alphas: must be positive (and phi non-negative)")
    labels = _load_labels(args.data)
    if labels.max() >= alphas.shape[1]:
        raise ValueError(f"labels: found class {labels.max()}, but alphas has {alphas.shape[1]} classes")
    hist = args.size_hist if args.size_hist is not None else model.get("size_hist")
    bins = args.size_bins if args.size_bins is not None else model.get("size_bins")
    if args.sizes is not None:
        sampler = resample_sizes(args.sizes)
    elif hist is not None and bins is not None:
        sampler = sizes_from_hist(np.asarray(hist), bins)
    else:
        sampler = resample_sizes(np.arange(20, 80))
    flat, offsets, repeat_of, sizes, unused = [], [0], [], [], 0
    for r in range(args.repeats):
        clients, left = partition_by_mdm(labels, phi, alphas, sampler, seed=args.seed + r,
                                         spread_after_fails=args.spread_after_fails,
                                         spread_pct=args.spread_pct)
        for c in clients:
            flat.append(c)
            offsets.append(offsets[-1] + len(c))
            repeat_of.append(r)
            sizes.append(len(c))
        unused += len(left)
    clients_path, props_path = f"{args.out_prefix}_clients.npz", f"{args.out_prefix}_label_props.npz"
    indices = np.concatenate(flat) if flat else np.zeros(0, np.int64)
    np.savez(clients_path, indices=indices, offsets=np.asarray(offsets), repeat=np.asarray(repeat_of))
    props = label_proportions(flat, labels, alphas.shape[1])
    np.savez(props_path, label_props=props)
    report: dict[str, Any] = {
        "clients": clients_path,
        "label_props": props_path,
        "n_clients": len(flat),
        "sizes": sizes,
        "unused": unused,
        "unused_per_repeat": unused / args.repeats,
    }
    if args.compare_to is not None:
        real = load_counts(args.compare_to, "compare_to")
        if real.shape[1] != alphas.shape[1]:
            raise ValueError("compare_to: must have as many classes as alphas")
        report["energy_distance"] = energy_distance(props, counts_to_proportions(real))
    return report
