"""The llama-inference task: eval times generation in the sandbox and checks outputs unchanged.

Its output gates are tested with the other timed task's in ``test_tasks_timed.py``.
"""

from __future__ import annotations

import torch

from tests import task_checks as th


def test_eval_case_is_not_the_workspace_default(prepared_suite_task, tmp_path):
    task = prepared_suite_task("llama-inference")
    ws = th.make_workspace(task, tmp_path / "ws")
    case = torch.load(task.scripts_dir / "eval_case.pt", weights_only=True)
    assert case["expected"].shape[1] == case["prompts"].shape[1] + case["max_new_tokens"]
    src = (ws / "inference.py").read_text()
    assert "make_weights(seed=0)" in src  # the workspace's own weights differ from eval's
