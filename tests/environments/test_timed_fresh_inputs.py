"""A timed task measures work that cannot be skipped: every measured call gets inputs that no
earlier call, in its process or an earlier repeat, was given.

The attack (issue 37, class 2): llama-inference's submission phase called ``generate`` three
times on the same prompts in one process, so an unchanged model behind a memo answered calls
2 and 3 from call 1 and scored a +46.2% "speed-up". The fast test below runs each timed task's
``produce.py`` with a submission that only records what it is given, over two repeats (two
challenges); the slow one scores the issue's memo itself through labcoat's own timed path.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from environments.scoring.score import make_score
from environments.scoring.submission import produce_dir
from environments.task.suite import list_tasks
from tests import task_checks as th

# A submission per timed task that records a digest of every call's inputs in seen.txt (next to
# itself) and returns something of the right shape; its answers are never checked here.
RECORDERS: dict[str, tuple[str, str]] = {
    "llama-inference": ("inference.py", '''
import hashlib
from pathlib import Path

import torch


def build_model(weights):
    return None


def generate(model, prompts, max_new_tokens):
    with open(Path(__file__).parent / "seen.txt", "a") as seen:
        seen.write(hashlib.sha256(prompts.numpy().tobytes()).hexdigest() + "\\n")
    return torch.cat([prompts, torch.zeros(prompts.shape[0], max_new_tokens, dtype=torch.int64)], 1)
'''),
    "vectorization": ("train.py", '''
import hashlib
from pathlib import Path

import numpy as np


class Conv2DLayer:
    def __init__(self, input_channels, num_filters, kernel_size, stride=1, padding=0,
                 activation="relu"):
        self.num_filters = num_filters

    def forward(self, features_batch):
        data = features_batch.tobytes() + np.asarray(self.kernel_matrices).tobytes()
        with open(Path(__file__).parent / "seen.txt", "a") as seen:
            seen.write(hashlib.sha256(data).hexdigest() + "\\n")
        return np.zeros(features_batch.shape[:3] + (self.num_filters,), np.float32)
'''),
}

TIMED = sorted(t.name for t in list_tasks() if t.timed)


def test_every_timed_task_has_a_recorder():
    """A new timed task is checked the moment it exists: it needs its recorder above."""
    assert TIMED and set(TIMED) == set(RECORDERS)


def _produce(spec, here: Path, workspace: Path, out: Path) -> None:
    """``here/produce.py: produce`` in this process (as the sandbox's runner calls it), with
    torch's thread count put back afterwards (llama-inference's produce sets it to 1)."""
    import torch

    threads = torch.get_num_threads()
    module_spec = importlib.util.spec_from_file_location(f"_produce_{spec.name}", here / "produce.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    try:
        module.produce(workspace, here, out)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("name", TIMED)
def test_each_measured_call_gets_inputs_it_has_not_seen(name, prepared_suite_task, tmp_path):
    spec = prepared_suite_task(name)
    ws = tmp_path / "ws"
    ws.mkdir()
    filename, source = RECORDERS[name]
    (ws / filename).write_text(source)
    for repeat in range(2):  # two repeats of one scoring: each its own challenge
        challenge = hashlib.sha256(f"{name}{repeat}".encode()).hexdigest()[:32]
        here = produce_dir(spec.scripts_dir, tmp_path / f"produce{repeat}", challenge)
        _produce(spec, here, ws, tmp_path / f"out{repeat}")
    seen = (ws / "seen.txt").read_text().split()
    assert len(seen) >= 2, seen
    assert len(set(seen)) == len(seen), (
        f"{name}: {len(seen) - len(set(seen))} of {len(seen)} measured calls were given inputs "
        "an earlier call had: a memo in the submission answers them without the work")


@pytest.mark.parametrize("name", TIMED)
def test_each_private_split_measures_inputs_of_its_own(name, prepared_suite_task, tmp_path):
    """One challenge, three splits (``split.txt`` beside produce.py, as the host writes it):
    no split's measured calls are given inputs another split's calls had."""
    spec = prepared_suite_task(name)
    ws = tmp_path / "ws"
    ws.mkdir()
    filename, source = RECORDERS[name]
    (ws / filename).write_text(source)
    for split in ("search", "select", "test"):
        here = produce_dir(spec.scripts_dir, tmp_path / f"produce-{split}", "5eed" * 8)
        (here / "split.txt").write_text(split)
        _produce(spec, here, ws, tmp_path / f"out-{split}")
    seen = (ws / "seen.txt").read_text().split()
    assert len(seen) >= 3 and len(set(seen)) == len(seen), seen


MEMO = '''

_memo = {}
_generate = generate


def generate(model, prompts, max_new_tokens):
    """The unchanged generation behind a memo keyed by the prompts."""
    key = (prompts.numpy().tobytes(), tuple(prompts.shape), max_new_tokens)
    if key not in _memo:
        _memo[key] = _generate(model, prompts, max_new_tokens)
    return _memo[key].clone()
'''


@pytest.mark.slow  # a whole timed scoring of llama-inference's unoptimised env/ (about a minute)
@pytest.mark.serial  # timed against the clock
def test_a_memo_of_earlier_calls_buys_no_speedup(prepared_suite_task, tmp_path):
    """The issue's attack: the unmodified model, memoised, scored success (+46.2%; here before
    the fix +52.0% [+17.6%, +96.5%]) while the calls of one process shared their prompts; after
    it, +7.0% [-11.8%, +29.8%] (the unchanged env/ beside it: -0.8%), not a success. It lives in
    the submission's own process, so no backend's isolation is involved: one backend shows it.
    Success (the interval's low end past the threshold) is what is asserted: the point estimate
    of two equal programs moves by ~10% on a loaded machine."""
    spec = prepared_suite_task("llama-inference")
    ws = th.make_workspace(spec, tmp_path / "ws")
    (ws / "inference.py").write_text((ws / "inference.py").read_text() + MEMO)
    result = th.score(spec, ws)
    assert result.value is not None, result.detail  # the memo's answers are right: it is scored
    scored = make_score(spec, result, None, th.SANDBOX)
    assert not scored.success, result.detail
