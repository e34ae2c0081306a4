"""Submission phase of sparse-compression: turn model.pt + model.Decoder into data.

Runs in its own sandboxed process (``environments/submission.py``): it writes the encoder
matrix B (``encoder.npz``) and exports the decoder (``torch.export``, ``CHUNK`` codes at a time)
as a graph of ATen ops plus weights. ``eval.py`` samples the private test set, encodes it with B
and runs that graph in another process; no code of the submission's runs there.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from methods._exported import save_exported  # noqa: E402
from methods._submission import load_submission, save_outputs  # noqa: E402

D, CHUNK = 96, 10_000


def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    if not (workspace / "model.pt").is_file():
        raise FileNotFoundError("model.pt is missing (run train.py)")
    ckpt = torch.load(workspace / "model.pt", map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("B"), torch.Tensor):
        raise ValueError("model.pt must be {'B': tensor, 'decoder': state_dict}")
    save_outputs(out, "encoder", B=ckpt["B"].double())
    decoder = load_submission(workspace, "model.py").Decoder()
    decoder.load_state_dict(ckpt["decoder"])
    save_exported(out, "decoder", decoder.eval(), (torch.ones(CHUNK, D),))
