"""Check a llama-inference submission's tokens; the throughput is measured by the host.

``produce.py`` ran the workspace's ``build_model``/``generate`` in the submission phase, each
call on prompts of its own drawn from the repeat's challenge; the host timed that whole process
against the pristine env/, interleaved (``environments/timing.py``). Here, in the trusted
phase, every call's tokens must start with the prompts that call was given and continue as the
original implementation decodes greedily: one pass of the pristine model over the returned
sequence gives the logits at every position, and each generated token must be their argmax. A
token within ``TIE`` of the best logit is accepted too, since a faithful faster implementation
(a KV cache: different but exact-in-maths arithmetic) may break a near-tie the other way; the
check then goes on from the submission's own token. A changed output raises ``ValueError``.
``score`` returns the tokens generated per run, which the host divides by the runtime;
``search_score`` and ``select_score`` check the same for the prompts of their split
(``produce.py: prompt_key``: disjoint domains of the scoring's challenge).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch

from methods._submission import load_outputs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # for pristine_inference (load_model)


def _produce_module():
    """produce.py beside this file, by path (another task's ``produce`` may be imported)."""
    spec = importlib.util.spec_from_file_location("llama_inference_produce", HERE / "produce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_produce = _produce_module()
N_PROMPTS, REPEATS, VOCAB = _produce.N_PROMPTS, _produce.REPEATS, _produce.VOCAB
prompt_key, prompts_for = _produce.prompt_key, _produce.prompts_for

TIE = 1e-3  # a faithful float32 implementation differs from the original by ~1e-5 in a logit


def load_model():
    """The pristine model (``prepare.py``'s copy of env/inference.py) with the case's weights."""
    from pristine_inference import build_model  # scripts/ is on the path (above)

    case = torch.load(HERE / "eval_case.pt", weights_only=True)
    return build_model(case["weights"]), int(case["max_new_tokens"])


def check_call(model, tokens: np.ndarray, prompts: torch.Tensor, new: int) -> None:
    """Raise ``ValueError`` unless ``tokens`` are ``prompts`` continued by greedy decoding."""
    shape = (N_PROMPTS, prompts.shape[1] + new)
    if tuple(tokens.shape) != shape:
        raise ValueError(f"outputs changed: generate returned shape {tuple(tokens.shape)}, "
                         f"expected {shape}")
    out = torch.as_tensor(tokens.astype(np.int64))
    if not torch.equal(out[:, : prompts.shape[1]], prompts):
        raise ValueError("outputs changed: the returned sequences do not start with the prompts")
    if (out < 0).any() or (out >= VOCAB).any():
        raise ValueError(f"outputs changed: tokens outside the vocabulary [0, {VOCAB})")
    with torch.no_grad():
        logits = model(out[:, :-1])[:, prompts.shape[1] - 1 :]
    chosen = logits.gather(-1, out[:, prompts.shape[1] :, None])[..., 0]
    wrong = int((chosen < logits.max(-1).values - TIE).sum())
    if wrong:
        raise ValueError(f"outputs changed: {wrong} of {N_PROMPTS * new} generated tokens are "
                         "not what the original greedy generation picks")


def split_members(split: str) -> list[str]:
    """What a split's prompts are drawn from: each call's key, for a scoring's challenge."""
    return [prompt_key("<challenge>", call, split) for call in range(REPEATS)]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    model, new = load_model()
    challenge = (Path(outputs) / "challenge.txt").read_text().strip()
    runs = load_outputs(outputs)
    if sorted(runs) != [f"tokens{i}" for i in range(REPEATS)]:
        raise ValueError(f"expected {REPEATS} generations, got {sorted(runs)}")
    for call in range(REPEATS):
        check_call(model, runs[f"tokens{call}"], prompts_for(challenge, call, split), new)
    return float(REPEATS * N_PROMPTS * new)
