"""Teachers trained once per (data, seed, settings) and cached as state dicts."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from methods.d3s.data import Split
from methods.d3s.models import Teacher, train_teacher


def load_or_train(split: Split, seeds: list[int], bn: bool = True, cache_dir: str | Path | None = None) -> list[Teacher]:
    cache = Path(cache_dir) if cache_dir else None
    out = []
    for seed in seeds:
        path = cache / f"teacher-{split.fingerprint()}-s{seed}-bn{int(bn)}.pt" if cache else None
        if path is not None and path.exists():
            net = Teacher(bn=bn)
            net.load_state_dict(torch.load(path, weights_only=True))
            net.eval()
            for p in net.parameters():
                p.requires_grad_(False)
        else:
            print(f"training teacher seed {seed}", file=sys.stderr)
            net = train_teacher(split.X_train, split.y_train, seed, bn=bn)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                torch.save(net.state_dict(), path)
        out.append(net)
    return out
