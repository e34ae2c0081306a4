"""Check a llama-inference submission's tokens; the throughput is measured by the host.

``produce.py`` ran the workspace's ``build_model``/``generate`` in the submission phase; the
host timed that whole process against the pristine env/, interleaved (``environments/timing.py``).
Here, in the trusted phase, every output must equal, token for token, what the original
implementation generated (computed once by prepare.py); a changed output raises ``ValueError``.
``score`` returns the tokens generated per run, which the host divides by the runtime.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from methods._submission import load_outputs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from produce import REPEATS  # noqa: E402

CASE = Path(__file__).resolve().parent / "eval_case.pt"


def score(outputs: str) -> float:
    case = torch.load(CASE, weights_only=True)
    expected = case["expected"].numpy()
    runs = load_outputs(outputs)
    if sorted(runs) != [f"tokens{i}" for i in range(REPEATS)]:
        raise ValueError(f"expected {REPEATS} generations, got {sorted(runs)}")
    for out in runs.values():
        if tuple(out.shape) != tuple(expected.shape):
            raise ValueError(f"outputs changed: generate returned shape {tuple(out.shape)}, "
                             f"expected {tuple(expected.shape)}")
        if not np.array_equal(out.astype(np.int64), expected):
            wrong = int((out.astype(np.int64) != expected).sum())
            raise ValueError(f"outputs changed: {wrong} of {expected.size} tokens differ from "
                             f"the original greedy generation")
    return float(REPEATS * case["prompts"].shape[0] * int(case["max_new_tokens"]))
