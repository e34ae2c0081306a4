"""Submission phase of llama-inference: greedy generation on the private prompts, three times.

Runs in its own sandboxed process (``environments/submission.py``) with ``inputs/case.pt``
(weights, prompts, token count; not the expected tokens). The host times the whole process,
interleaved with the pristine env/ (``environments/timing.py``); ``eval.py`` compares the saved
tokens with the original implementation's in another process.
"""

from __future__ import annotations

from pathlib import Path

import torch

from methods._submission import load_submission, save_outputs

REPEATS = 3  # generations per process, so the interpreter's start is a small part of the time


def produce(workspace: Path, inputs: Path, out: Path) -> None:
    torch.set_num_threads(1)
    case = torch.load(inputs / "inputs" / "case.pt", weights_only=True)
    module = load_submission(workspace, "inference.py", name="_labcoat_llama_inference")
    for name in ("build_model", "generate"):
        if not callable(getattr(module, name, None)):
            raise ValueError(f"inference.py defines no {name}() function")
    model = module.build_model({k: v.clone() for k, v in case["weights"].items()})
    runs = [torch.as_tensor(module.generate(model, case["prompts"].clone(),
                                            int(case["max_new_tokens"]))).to(torch.int64)
            for _ in range(REPEATS)]
    save_outputs(out, **{f"tokens{i}": t for i, t in enumerate(runs)})
