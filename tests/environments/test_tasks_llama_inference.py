"""The llama-inference task: eval times generation in the sandbox and checks outputs unchanged."""

from __future__ import annotations

import pytest
import torch

from tests import task_checks as th

NAME = "llama-inference"


@pytest.fixture
def task(prepared_suite_task):
    return prepared_suite_task(NAME)


def test_task_loads():
    spec = th.task_spec(NAME)
    assert spec.metric == "tokens_per_second" and spec.direction == "higher"
    assert spec.solve == []  # eval runs the code itself
    assert spec.baseline is None  # a throughput is measured on the machine that scores


def test_eval_case_is_not_the_workspace_default(task, tmp_path):
    ws = th.make_workspace(task, tmp_path / "ws")
    case = torch.load(task.scripts_dir / "eval_case.pt", weights_only=True)
    assert case["expected"].shape[1] == case["prompts"].shape[1] + case["max_new_tokens"]
    src = (ws / "inference.py").read_text()
    assert "make_weights(seed=0)" in src  # the workspace's own weights differ from eval's


def _patched(task, tmp_path, old: str, new: str):
    ws = th.make_workspace(task, tmp_path / "ws", reference=True)
    path = ws / "inference.py"
    src = path.read_text()
    assert old in src
    path.write_text(src.replace(old, new))
    return th.score(task, ws)


def test_changed_outputs_are_rejected(task, tmp_path):
    result = _patched(task, tmp_path, "    return out\n", "    out[:, -1] = 0\n    return out\n")
    assert result.value is None and "outputs changed" in result.detail


@pytest.mark.slow  # a whole timed scoring; the same "outputs changed" gate is held fast above
def test_a_different_function_is_rejected(task, tmp_path):
    """A model that computes a slightly different function (sharper attention) is caught."""
    result = _patched(
        task, tmp_path, "    model.load_state_dict(weights)\n",
        "    model.load_state_dict({k: v * (1.2 if 'wq' in k else 1.0)"
        " for k, v in weights.items()})\n",
    )
    assert result.value is None and "outputs changed" in result.detail
