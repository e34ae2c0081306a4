"""Compute features.py on every shifted set and print them (no score: the accuracies are
private; use the in-run validation, or build labelled calibration shifts from the source data)."""

import time
from pathlib import Path

import numpy as np
import torch

from features import features
from model import load_model

torch.set_num_threads(1)
for path in sorted(Path("data/shifted").glob("*.npz")):
    start = time.perf_counter()
    f = features(load_model(), np.load(path)["X"])
    print(f"{path.stem:<12} {np.round(f, 5)}  ({time.perf_counter() - start:.1f} s)")
