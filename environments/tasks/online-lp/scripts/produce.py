"""Submission phase of online-lp: the workspace's policy over one split's 24 private instances.

Runs in its own sandboxed process (``environments/submission.py``) with the instances' seeds
of the split ``split.txt`` names (``inputs/instances.json`` for test,
``inputs/instances_<split>.json``; not their offline optima). Eval's loop (methods.online_lp.interface)
runs the 24 rows together and the probe row alone; both decision matrices go to ``outputs.npz``.
``eval.py`` re-checks every decision against the budgets, recomputes the rewards and the
regret, and compares the probe in another process.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from methods._submission import load_submission, save_outputs, split_of  # noqa: E402
from methods.online_lp.instances import make_instance  # noqa: E402
from methods.online_lp.interface import run_policy  # noqa: E402
from methods.online_lp.simulate import Batch  # noqa: E402

TIME_LIMIT_S = 120.0


def instances(info: dict) -> list:
    return [make_instance("scaled", info["T"], info["m"], r["seed"], info["base_budget"])
            for r in info["instances"]]


def inputs_file(split: str) -> str:
    """The split's instances (seeds, no optima) under ``inputs/``; test's kept its old name."""
    return "instances.json" if split == "test" else f"instances_{split}.json"


def produce(workspace: Path, here: Path, out: Path) -> None:
    info = json.loads((here / "inputs" / inputs_file(split_of(here))).read_text())
    insts = instances(info)
    module = load_submission(workspace, "policy.py")
    together = run_policy(module.init, module.decide, Batch.stack(insts), TIME_LIMIT_S)
    module = load_submission(workspace, "policy.py")  # fresh module state for the probe
    alone = run_policy(module.init, module.decide, Batch.stack([insts[info["probe_row"]]]),
                       TIME_LIMIT_S)
    save_outputs(out, decisions=together.decisions, alone=alone.decisions)
