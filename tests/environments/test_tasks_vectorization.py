"""The vectorization task: eval times the workspace's Conv2D forward pass and gates its output."""

from __future__ import annotations

import pytest

from tests import task_checks as th

NAME = "vectorization"


@pytest.fixture
def task(prepared_suite_task):
    return prepared_suite_task(NAME)


def test_task_loads():
    spec = th.task_spec(NAME)
    assert spec.kind == "classic"
    assert spec.direction == "lower"
    assert spec.solve == []  # eval runs the code itself
    # a runtime depends on the machine: the baseline is measured there, never fixed
    assert spec.baseline is None
    assert "Conv2DLayer" in spec.research_problem


def _patched(task, tmp_path, old: str, new: str):
    ws = th.make_workspace(task, tmp_path / "ws", reference=True)
    train = ws / "train.py"
    src = train.read_text()
    assert old in src
    train.write_text(src.replace(old, new))
    return th.score(task, ws)


def test_wrong_output_is_rejected(task, tmp_path):
    result = _patched(task, tmp_path, "output = relu(output)", "output = relu(output) * 1.01")
    assert result.value is None and result.failure == "eval_error"
    assert "wrong output" in result.detail


def test_wrong_shape_is_rejected(task, tmp_path):
    result = _patched(task, tmp_path, "        return output\n", "        return output[:, 1:]\n")
    assert result.value is None and "shape" in result.detail


def test_cached_answers_do_not_pass(task, tmp_path):
    """Every repeat is a new process with a new challenge, and the workspace and /tmp are reset
    between repeats: an answer saved by one repeat and replayed by the next is caught."""
    signature = "    def forward(self, features_batch: np.ndarray) -> np.ndarray:\n"
    result = _patched(
        task, tmp_path, signature,
        signature
        + "        import os\n"
        "        for cache in ('/tmp/cache.npy', 'cache.npy'):\n"
        "            if os.path.exists(cache):\n"
        "                return np.load(cache)\n"
        "        out = self._forward(features_batch)\n"
        "        np.save('/tmp/cache.npy', out)\n"
        "        np.save('cache.npy', out)\n"
        "        return out\n\n"
        "    def _forward(self, features_batch: np.ndarray) -> np.ndarray:\n",
    )
    assert result.value is not None, result.detail  # nothing cached survived a repeat
