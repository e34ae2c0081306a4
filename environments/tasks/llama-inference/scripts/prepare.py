"""Build the llama-inference task's private evaluation case.

The model's architecture is the pristine ``env/inference.py`` of this task copy; the weights
come from its ``make_weights`` with a secret seed (so a workspace cannot precompute or cache
the evaluated outputs), and the prompts are drawn from another. The expected tokens are
produced by the pristine, unoptimised greedy ``generate``. Greedy decoding is only well defined
where the top logit is clearly ahead, so a prompt whose generation ever has its best two
logits closer than ``MIN_MARGIN`` is replaced by a fresh draw: a faithful faster
implementation (different but exact-in-maths arithmetic, e.g. a KV cache) then reproduces the
tokens exactly.

Writes (current directory = the task copy's ``scripts/``):
  eval_case.pt   {"weights": {...}, "prompts": (B, T0) int64, "expected": (B, T0 + NEW) int64,
                  "max_new_tokens": NEW}   (private; read by eval.py)
  inputs/case.pt the same without "expected" (shown to produce.py, the submission phase)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

WEIGHT_SEED = 60_221
PROMPT_SEED = 14_142
N_PROMPTS, PROMPT_LEN, NEW_TOKENS = 4, 16, 32
MIN_MARGIN = 0.01
HERE = Path(__file__).resolve().parent


def load_reference():
    path = HERE.parent / "env" / "inference.py"
    spec = importlib.util.spec_from_file_location("_llama_inference_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ref = load_reference()
    torch.set_num_threads(1)
    weights = ref.make_weights(WEIGHT_SEED)
    model = ref.build_model(weights)
    g = torch.Generator().manual_seed(PROMPT_SEED)
    prompts, outputs, rejected = [], [], 0
    with torch.no_grad():
        while len(prompts) < N_PROMPTS:
            prompt = torch.randint(0, ref.VOCAB, (1, PROMPT_LEN), generator=g)
            out = ref.generate(model, prompt, NEW_TOKENS)
            logits = model(out[:, :-1])[0, PROMPT_LEN - 1 :]
            top2 = logits.topk(2, dim=-1).values
            if (top2[:, 0] - top2[:, 1]).min() < MIN_MARGIN:
                rejected += 1
                continue
            prompts.append(prompt[0])
            outputs.append(out[0])
    case = {"weights": weights, "prompts": torch.stack(prompts),
            "expected": torch.stack(outputs), "max_new_tokens": NEW_TOKENS}
    torch.save(case, HERE / "eval_case.pt")
    # what the submission phase may see (produce.py): everything but the expected tokens
    (HERE / "inputs").mkdir(exist_ok=True)
    torch.save({k: v for k, v in case.items() if k != "expected"}, HERE / "inputs" / "case.pt")
    print(f"llama-inference: {N_PROMPTS} prompts x {NEW_TOKENS} new tokens "
          f"({rejected} near-tie prompts redrawn)")


if __name__ == "__main__":
    main()
