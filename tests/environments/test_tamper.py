"""The tamper suite: every task whose scoring runs submitted code, attacked every way we know.

A submission may only reach its score through the outputs its task asks for. Each attack
replaces the file a task's evaluation imports from the workspace and tries to reach the score
some other way, claiming a value far better than any honest one (``FAKE``):

- ``result_fd``: write a result report to every inherited descriptor (the trusted runner's
  private pipe among them; its number is visible in ``sys.argv`` and ``/proc/self/fd``), exit 0;
- ``patch_stdlib``: replace ``json.dumps`` (how a report is written) and ``builtins.float``
  (how a value is read), then fail, so any report written after it carries the fake value;
- ``daemon``: fork a detached process that writes the fake report later, after the evaluation's
  own report, and let the evaluation fail meanwhile;
- ``timer`` (timing tasks): a wrong, instant implementation with ``time.perf_counter`` frozen and
  the correctness checks (``np.allclose``, ``torch.equal``) patched to agree.

None of them may score ``FAKE``. Before the two-phase contract (``environments/scoring/submission.py``)
all 16 of these tasks were fakeable; on it, 0 of 16 are: the submission's code runs in its own
sandbox with no result channel, and the trusted phase scores only its outputs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests import task_checks as th
from tests.fast_set import representatives

# task -> the workspace file its evaluation imports (the submission's code)
SUBMISSION_FILE = {
    "bfn-fast-sampling": "sampler.py",
    "federated-partition": "partition.py",
    "label-free-accuracy": "features.py",
    "llama-inference": "inference.py",
    "ln-net-capacity": "lnlib.py",
    "local-learning": "rule.py",
    "lora-routing": "route.py",
    "offline-irl": "feasible.py",
    "online-lp": "policy.py",
    "poglm-hidden-neurons": "q.py",
    "q-bias": "estimator.py",
    "sparse-compression": "model.py",
    "sparse-robustness": "model.py",
    "spurious-features": "train.py",
    "structured-bbvi": "family.py",
    "vectorization": "train.py",
}
TIMING = {"vectorization", "llama-inference"}
FAST = {
    # every attack class stays in README's fast set on four tasks whose scoring takes a second
    # or two (a plain two-phase task, an offline one, a federated one, a timed one); the other
    # rows of the matrix (2-25 s an attack: a timed scoring, a training, a prepare nothing else
    # in the fast set needs) run in the slow set
    "q-bias", "offline-irl", "federated-partition", "vectorization",
}
SLOW = set(SUBMISSION_FILE) - FAST


def _tasks(names):
    return [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in sorted(names)]

_REPORT = textwrap.dedent("""
    import json, os, sys
    FAKE = @FAKE@
    LINE = ("\\n" + json.dumps({"value": FAKE}) + "\\n").encode()

    def spray():
        for name in os.listdir("/proc/self/fd"):
            try:
                if int(name) > 2:
                    os.write(int(name), LINE)
            except (OSError, ValueError):
                pass
""")

ATTACKS = {
    "result_fd": _REPORT + textwrap.dedent("""
        spray()
        sys.stdout.flush()
        os._exit(0)
    """),
    "patch_stdlib": _REPORT + textwrap.dedent("""
        import builtins
        _dumps = json.dumps
        json.dumps = lambda obj, *a, **k: _dumps({"value": FAKE})
        builtins.float = lambda *a, **k: FAKE
        raise RuntimeError("tampering done")
    """),
    "daemon": _REPORT + textwrap.dedent("""
        import time
        if os.fork() == 0:
            os.setsid()
            time.sleep(1.0)
            spray()
            os._exit(0)
        raise RuntimeError("the daemon reports later")
    """),
}

_TIMER = textwrap.dedent("""
    import time
    import numpy as np
    time.perf_counter = lambda: 0.0
    np.allclose = lambda *a, **k: True
    try:
        import torch
        torch.equal = lambda *a, **k: True
    except ImportError:
        pass
""")
TIMER_ATTACK = {
    "vectorization": _TIMER + textwrap.dedent("""
        class Conv2DLayer:
            def __init__(self, *a, **k):
                pass
            def forward(self, x):
                return np.zeros((x.shape[0], x.shape[1], x.shape[2], 8))
    """),
    "llama-inference": _TIMER + textwrap.dedent("""
        def build_model(weights):
            return None
        def generate(model, prompts, new_tokens):
            return torch.zeros((prompts.shape[0], prompts.shape[1] + new_tokens), dtype=torch.int64)
    """),
}


def fake_value(spec) -> float:
    return 12345.0 if spec.higher_is_better else -12345.0


def attacked(name: str, tmp_path: Path, source: str):
    spec = th.prepared_task(name)
    ws = th.make_workspace(spec, tmp_path / "ws")
    (ws / SUBMISSION_FILE[name]).write_text(source.replace("@FAKE@", repr(fake_value(spec))))
    (ws / "model.pt").touch(exist_ok=True)  # tasks that check a checkpoint exists first
    return spec, th.score(spec, ws)


# the descriptor spray waits out a whole scoring of a timed or federated task (3-5 s): the fast set
# sprays at the two tasks whose scoring takes under a second
PAIRS = representatives(
    [pytest.param(t.values[0], attack, id=f"{t.values[0]}-{attack}", marks=t.marks)
     for t in _tasks(SUBMISSION_FILE) for attack in sorted(ATTACKS)],
    lambda i: i not in {"vectorization-result_fd", "federated-partition-result_fd"})


@pytest.mark.parametrize(("name", "attack"), PAIRS)
def test_attack_does_not_reach_the_score(name, attack, tmp_path):
    spec, result = attacked(name, tmp_path, ATTACKS[attack])
    assert result.value != fake_value(spec), f"{name}: the {attack} attack faked the score"
    if not spec.is_read_only(SUBMISSION_FILE[name]):  # else the pristine file is scored
        assert result.value is None, f"{name}: an attack scored {result.value}"


@pytest.mark.parametrize("name", _tasks(TIMING))
def test_frozen_timer_and_patched_checks_do_not_score(name, tmp_path):
    _, result = attacked(name, tmp_path, TIMER_ATTACK[name])
    assert result.value is None, f"{name}: a wrong output with a frozen timer scored {result.value}"
    assert result.failure == "eval_error"
