"""The source model's architecture (its weights are source_model.pt, read-only)."""

import torch

from methods.entropy_enigma.model import DigitsBNMLP


def load_model(path: str = "source_model.pt") -> DigitsBNMLP:
    model = DigitsBNMLP()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()
