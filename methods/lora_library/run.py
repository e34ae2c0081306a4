"""The mbc_cluster and arrow_route tools: file I/O and reports around the library."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import torch

from methods._data import load_npz
from methods.lora_library.arrow import arrow_prototypes, arrow_route
from methods.lora_library.mbc import mbc_cluster
from methods.lora_library.synthetic import (
    adjusted_rand,
    build_library,
    evaluate_library,
)
from methods.lora_library.tools import ArrowArgs, MBCArgs, SyntheticLibrary


def run_mbc(args: MBCArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    ari = None
    if args.vectors is not None:
        data = load_npz(args.vectors, "vectors", required=("V",))
        vectors, k = data["V"], args.n_clusters
    else:
        syn = args.synthetic or SyntheticLibrary()
        lib = build_library(**syn.model_dump(), train_experts=False)
        vectors, k = lib.private.vectors(), args.n_clusters or syn.families
    res = mbc_cluster(vectors, k, sparsity=args.sparsity, n_components=args.svd_components,
                      n_init=args.n_init, kmeans_seed=args.seed)
    if args.vectors is None:
        ari = adjusted_rand([t.family for t in lib.tasks], res.labels)
    return {"labels": res.labels.tolist(), "similarity": np.round(res.similarity, 4).tolist(), "ari": ari,
            "n_components_used": res.n_components_used, "kept_fraction": res.kept_fraction,
            "config": args.model_dump()}


def _experts_from_npz(path: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    data = load_npz(path, "experts")
    ids = sorted({int(m.group(1)) for k in data if (m := re.fullmatch(rf"A_(\d+)_{layer}", k))})
    if not ids:
        raise ValueError(f"experts: no `A_<e>_{layer}` arrays for layer {layer}")
    try:
        A = torch.stack([torch.as_tensor(data[f"A_{e}_{layer}"], dtype=torch.float64) for e in ids])
        B = torch.stack([torch.as_tensor(data[f"B_{e}_{layer}"], dtype=torch.float64) for e in ids])
    except KeyError as err:
        raise ValueError(f"experts: missing {err.args[0]}") from err
    if A.shape[2] != B.shape[1]:
        raise ValueError("experts: A is (in x r) and B (r x out) with the same r")
    return A, B


def run_arrow(args: ArrowArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    if args.experts is not None:
        A, B = _experts_from_npz(args.experts, args.layer)
        h = load_npz(args.h, "h")
        if "h" not in h:
            raise ValueError(f"h: {args.h} has no `h` array")
        h_t = torch.as_tensor(h["h"], dtype=torch.float64)
        if h_t.ndim != 2 or h_t.shape[1] != A.shape[1]:
            raise ValueError(f"h: must be (n x {A.shape[1]}) to match the experts' input size")
        protos = arrow_prototypes(A, B, args.scale_by_sigma)
        weights = arrow_route(h_t, protos, args.top_k, args.temperature)
        ent = -(weights * torch.log(weights.clamp_min(1e-30))).sum(dim=1)
        np.savez("arrow_weights.npz", weights=weights.numpy())
        return {"weights": "arrow_weights.npz", "n_tokens": int(len(h_t)), "n_experts": int(len(A)),
                "prototypes": np.round(protos.numpy(), 6).tolist(),
                "entropy_of_weights": float(ent.mean()), "mean_weights": weights.mean(dim=0).tolist(),
                "config": args.model_dump()}
    syn = args.synthetic or SyntheticLibrary()
    lib = build_library(**syn.model_dump())
    res = evaluate_library(lib, args.top_k, args.temperature, args.scale_by_sigma, tuple(args.modes))
    return {"mse": res["mse"], "routing_accuracy": res["routing_accuracy"],
            "ari": adjusted_rand([t.family for t in lib.tasks], lib.mbc.labels),
            "expert_of_family": lib.expert_of_family, "config": args.model_dump()}
