"""The networks of this task (read-only).

- ``Teacher``: 64 -> 128 -> BN -> ReLU -> 128 -> BN -> ReLU -> 10; ``teacher.hidden(x)`` returns
  the post-BN pre-ReLU features of both hidden layers and the logits. Three are trained on
  data/train.npz (teachers/teacher_s{0,10,11}.pt); ``load_teachers()`` returns them frozen, in
  eval mode.
- ``PlainMLP``: 64 -> 128 -> ReLU -> 128 -> ReLU -> 10, the student eval trains on your images.
"""

from pathlib import Path

import numpy as np
import torch

from methods.d3s.models import PlainMLP, Teacher

HERE = Path(__file__).resolve().parent
TEACHER_SEEDS = (0, 10, 11)


def load_teachers() -> list[Teacher]:
    out = []
    for seed in TEACHER_SEEDS:
        net = Teacher(bn=True)
        net.load_state_dict(torch.load(HERE / "teachers" / f"teacher_s{seed}.pt", weights_only=True))
        net.eval()
        for p in net.parameters():
            p.requires_grad_(False)
        out.append(net)
    return out


def load_train() -> tuple[torch.Tensor, torch.Tensor]:
    with np.load(HERE / "data" / "train.npz") as z:
        return torch.from_numpy(z["X_train"]), torch.from_numpy(z["y_train"])


__all__ = ["PlainMLP", "Teacher", "load_teachers", "load_train"]
