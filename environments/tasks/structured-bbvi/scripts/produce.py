"""Submission phase of structured-bbvi: turn family.py into data.

Runs in its own sandboxed process (``environments/submission.py``): ``init`` becomes its
tensors (``init.npz``, called once under ``torch.manual_seed(0)``; every problem has the same
dimensions), ``CONFIG`` JSON (``config.json``) and ``location_scale`` a ``torch.export`` graph
(params dict -> (m, C)). ``eval.py`` runs the BBVI loop in another process, differentiating
through that graph; no code of the submission's runs there.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from methods._exported import save_exported  # noqa: E402
from methods._submission import load_submission, save_json, save_outputs  # noqa: E402

N, D_GLOBAL, D_LOCAL = 32, 2, 2


def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    family = load_submission(workspace, "family.py")
    torch.manual_seed(0)  # for families whose init draws random numbers
    params = family.init(D_GLOBAL, D_LOCAL, N)
    if not isinstance(params, dict) or not all(isinstance(v, torch.Tensor)
                                               for v in params.values()):
        raise TypeError("init() must return a dict of tensors")
    params = {str(k): v.detach().clone() for k, v in params.items()}

    class LocationScale(torch.nn.Module):
        def forward(self, p: dict):
            return family.location_scale(p)

    save_outputs(out, "init", **params)
    save_json(out, getattr(family, "CONFIG", None), "config")
    save_exported(out, "location_scale", LocationScale(), (params,))
