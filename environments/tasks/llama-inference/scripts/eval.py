"""Score a llama-inference workspace: greedy-generation throughput in tokens per second.

This file imports the workspace's ``inference.py`` itself, builds the model with the task's
private weights (``build_model(weights)``), and times ``generate(model, prompts,
max_new_tokens)`` on the private prompts, best of a few repeats. Every output must equal,
token for token, what the original implementation generated (computed once by prepare.py);
a changed output raises ``ValueError``. Nothing the workspace prints or writes is trusted.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import torch

CASE = Path(__file__).resolve().parent / "eval_case.pt"
MODULE_FILE = "inference.py"
REPEATS = 3
TIME_BUDGET = 20.0  # seconds of timed generation after which no further repeat starts


def _load_module(folder: Path):
    path = folder / MODULE_FILE
    if not path.exists():
        raise ValueError(f"{MODULE_FILE} not found in the workspace {folder}")
    spec = importlib.util.spec_from_file_location("_labcoat_llama_inference", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    for name in ("build_model", "generate"):
        if not callable(getattr(module, name, None)):
            raise ValueError(f"{MODULE_FILE} defines no {name}() function")
    return module


def get_score(submission_folder: str = ".") -> float:
    torch.set_num_threads(1)
    case = torch.load(CASE, weights_only=True)
    module = _load_module(Path(submission_folder).resolve())
    model = module.build_model({k: v.clone() for k, v in case["weights"].items()})
    prompts, expected = case["prompts"], case["expected"]
    new_tokens = int(case["max_new_tokens"])
    n_generated = prompts.shape[0] * new_tokens

    times: list[float] = []
    for repeat in range(REPEATS):
        start = time.perf_counter()
        out = module.generate(model, prompts.clone(), new_tokens)
        elapsed = time.perf_counter() - start
        out = torch.as_tensor(out)
        if tuple(out.shape) != tuple(expected.shape):
            raise ValueError(f"outputs changed: generate returned shape {tuple(out.shape)}, "
                             f"expected {tuple(expected.shape)}")
        if not torch.equal(out.to(torch.int64), expected):
            wrong = int((out.to(torch.int64) != expected).sum())
            raise ValueError(f"outputs changed on repeat {repeat}: {wrong} of "
                             f"{expected.numel()} tokens differ from the original greedy "
                             f"generation")
        times.append(elapsed)
        if sum(times) > TIME_BUDGET:
            break
    best = min(times)
    print(f"{n_generated} tokens in {best:.4f} s (best of {len(times)})")
    return n_generated / best


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
