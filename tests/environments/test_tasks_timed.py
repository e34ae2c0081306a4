"""The timed tasks (llama-inference, vectorization): eval runs the workspace's code itself and
gates what it computes before it times it.

Each case patches one file of the reference solution and scores the workspace through labcoat's
own path: a changed output, shape or function must be refused, so that a speed-up can never be
bought by computing something else.
"""

from __future__ import annotations

import pytest

from tests import task_checks as th

LLAMA, VECTOR = ("llama-inference", "inference.py"), ("vectorization", "train.py")
SHARPER_ATTENTION = ("    model.load_state_dict({k: v * (1.2 if 'wq' in k else 1.0)"
                     " for k, v in weights.items()})\n")

REJECTED = [
    # each a whole timed scoring (llama-inference 15-30 s, vectorization ~7 s): the slow set; the
    # fast set holds the output gate through test_tamper's frozen timer (a wrong output, timed fast)
    pytest.param(*LLAMA, "    return out\n", "    out[:, -1] = 0\n    return out\n",
                 "outputs changed", id="llama-changed-outputs", marks=pytest.mark.slow),
    pytest.param(*LLAMA, "    model.load_state_dict(weights)\n", SHARPER_ATTENTION,
                 "outputs changed", id="llama-different-function", marks=pytest.mark.slow),
    pytest.param(*VECTOR, "output = relu(output)", "output = relu(output) * 1.01",
                 "wrong output", id="vectorization-wrong-output", marks=pytest.mark.slow),
    pytest.param(*VECTOR, "        return output\n", "        return output[:, 1:]\n",
                 "shape", id="vectorization-wrong-shape", marks=pytest.mark.slow),
]


def _patched(spec, tmp_path, rel: str, old: str, new: str):
    """Score the reference solution with ``old`` replaced by ``new`` in ``rel``."""
    ws = th.make_workspace(spec, tmp_path / "ws", reference=True)
    path = ws / rel
    src = path.read_text()
    assert old in src
    path.write_text(src.replace(old, new))
    return th.score(spec, ws)


@pytest.mark.parametrize(("name", "rel", "old", "new", "detail"), REJECTED)
def test_a_changed_computation_is_rejected(name, rel, old, new, detail, prepared_suite_task,
                                           tmp_path):
    result = _patched(prepared_suite_task(name), tmp_path, rel, old, new)
    assert result.value is None and result.failure == "eval_error", result
    assert detail in result.detail


@pytest.mark.slow  # a whole timed scoring (~10 s); test_timed_repeats holds the same gate on a toy task
def test_cached_answers_do_not_pass(prepared_suite_task, tmp_path):
    """Every repeat is a new process with a new challenge, and the workspace and /tmp are reset
    between repeats: an answer saved by one repeat and replayed by the next is caught."""
    signature = "    def forward(self, features_batch: np.ndarray) -> np.ndarray:\n"
    result = _patched(
        prepared_suite_task(VECTOR[0]), tmp_path, VECTOR[1], signature,
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
