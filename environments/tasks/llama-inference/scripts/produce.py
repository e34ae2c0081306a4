"""Submission phase of llama-inference: greedy generation, three calls, each on fresh prompts.

Runs in its own sandboxed process (``environments/submission.py``) with ``inputs/case.pt``
(weights, token count) and this repeat's ``challenge.txt``. The host times the whole process,
interleaved with the pristine env/ (``environments/timing.py``); ``eval.py`` checks the saved
tokens against the original implementation in another process.

Every call's prompts are drawn from the challenge and the call's index (:func:`prompts_for`), so
no call is given prompts an earlier call had, in this process or in an earlier repeat (each has
its own challenge): a submission that memoises ``generate`` gains nothing (issue 37: with one
batch of prompts for all three calls, the unchanged model behind a memo "sped up" by 46%).
The private splits (``split.txt``) draw from domains of their own: ``test``'s prompts are
seeded by ``"<challenge>:<call>"`` as always, ``search``'s and ``select``'s by
``"<split>:<challenge>:<call>"``, which no hex challenge can spell, so no split is ever given
another's prompts.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from methods._submission import load_submission, save_outputs, split_of

REPEATS = 3  # generations per process, so the interpreter's start is a small part of the time
N_PROMPTS, PROMPT_LEN, VOCAB = 4, 16, 256


def prompt_key(challenge: str, call: int, split: str = "test") -> str:
    """What seeds a call's prompts: test's historical key, another split's own domain."""
    return f"{challenge}:{call}" if split == "test" else f"{split}:{challenge}:{call}"


def prompts_for(challenge: str, call: int, split: str = "test") -> torch.Tensor:
    """The (N_PROMPTS, PROMPT_LEN) int64 prompts of call ``call`` under ``challenge`` in
    ``split``: random tokens seeded by all three, so eval.py draws the same ones and no two
    calls share any."""
    key = prompt_key(challenge, call, split)
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (N_PROMPTS, PROMPT_LEN), generator=generator)


def produce(workspace: Path, inputs: Path, out: Path) -> None:
    torch.set_num_threads(1)
    case = torch.load(inputs / "inputs" / "case.pt", weights_only=True)
    challenge = (inputs / "challenge.txt").read_text().strip()
    split = split_of(inputs)
    module = load_submission(workspace, "inference.py", name="_labcoat_llama_inference")
    for name in ("build_model", "generate"):
        if not callable(getattr(module, name, None)):
            raise ValueError(f"inference.py defines no {name}() function")
    model = module.build_model({k: v.clone() for k, v in case["weights"].items()})
    runs = [torch.as_tensor(module.generate(model, prompts_for(challenge, call, split),
                                            int(case["max_new_tokens"]))).to(torch.int64)
            for call in range(REPEATS)]
    save_outputs(out, **{f"tokens{i}": t for i, t in enumerate(runs)})
