"""Build the llama-inference task's evaluation case.

The model's architecture is the pristine ``env/inference.py`` of this task copy; the weights
come from its ``make_weights`` with a seed of the task's own (not the workspace's default), so
a workspace cannot ship outputs computed for them. The prompts are not here: each call of each
repeat draws its own from that repeat's challenge (``produce.py: prompts_for``), and
``eval.py`` checks the returned tokens with the pristine model, which it loads from the copy
of ``env/inference.py`` written here (the trusted phase sees only ``scripts/``).

Writes (current directory = the task copy's ``scripts/``):
  eval_case.pt            {"weights": {...}, "max_new_tokens": NEW}   (read by eval.py)
  pristine_inference.py   the pristine model (read by eval.py)
  inputs/case.pt          the same case (shown to produce.py, the submission phase)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

WEIGHT_SEED = 60_221
NEW_TOKENS = 32
HERE = Path(__file__).resolve().parent
PRISTINE = HERE / "pristine_inference.py"


def main() -> None:
    shutil.copyfile(HERE.parent / "env" / "inference.py", PRISTINE)
    from pristine_inference import make_weights  # the copy just written

    case = {"weights": make_weights(WEIGHT_SEED), "max_new_tokens": NEW_TOKENS}
    torch.save(case, HERE / "eval_case.pt")
    (HERE / "inputs").mkdir(exist_ok=True)
    torch.save(case, HERE / "inputs" / "case.pt")
    print(f"llama-inference: weights seed {WEIGHT_SEED}, {NEW_TOKENS} new tokens per prompt")


if __name__ == "__main__":
    import sys

    sys.dont_write_bytecode = True  # a prepared copy holds what main() writes, nothing more
    sys.path.insert(0, str(HERE))
    main()
