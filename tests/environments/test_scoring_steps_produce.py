"""``score_steps`` for a two-phase task (``scripts/produce.py``): the submission's workspace and
its sandbox kept across steps, the outputs scored in a sandbox of their own.

Here the submission phase is where the workspace's code runs, so it is the fingerprint and the
attacks of ``test_scoring_steps`` that run there: ``produce`` records a fingerprint of all it
can see (the workspace, ``/tmp``, ``/dev/shm``) as its output, which ``score`` returns, then
does what ``attack.txt`` says. Each later step's score with ``--all-steps`` must equal the
same step scored alone, in a fresh scratch and fresh sandboxes.
"""

from __future__ import annotations

import textwrap

import pytest

from environments.scoring import scratch_sync
from tests.conftest import write_task
from tests.environments.test_scoring_steps import (
    ATTACKS,
    BACKENDS,
    EQUALITY_BACKENDS,
    FINGERPRINT_EVAL,
    assert_all_steps_as_alone,
    assert_nothing_left,
    attack_run,
    later_scores,
    script,
    trusting_sync,
    write,
)
from tests.fast_set import representatives

PRODUCE = FINGERPRINT_EVAL + textwrap.dedent('''
    def produce(workspace, here, out):
        import json
        value = get_score(str(workspace))  # the fingerprint, then the attack
        with open(os.path.join(str(out), "value.json"), "w") as f:
            json.dump(value, f)
''')
SCORE = textwrap.dedent('''
    import json, os
    def score(folder):
        with open(os.path.join(folder, "value.json")) as f:
            return float(json.load(f))
''')


def produce_task(root):
    return write_task(root, eval_body=SCORE, read_only="data.txt\nlib/*\n", files={
        "scripts/produce.py": PRODUCE, "env/lib/helper.py": "X = 1\n",
        "env/sub/keep_me.txt": "pristine\n"})


@pytest.mark.parametrize("backend", EQUALITY_BACKENDS)
def test_all_steps_of_a_two_phase_task_equal_each_step_scored_alone(tmp_path, backend, scorer_stats):
    assert_all_steps_as_alone(produce_task, tmp_path, [
        write("keep.txt", "kept\n"), write("sub/a.csv", "1,2\n"), write("model.py", "W = 1\n"),
        *script("""
            import os
            os.rename("sub/a.csv", "sub/renamed.csv")
            os.makedirs("__pycache__", exist_ok=True)
            open("__pycache__/x.cpython.pyc", "wb").write(b"junk")
            open("data.txt", "w").write("100 200\\n")
            open("lib/helper.py", "w").write("X = 2\\n")
        """),
        write("model.py", "W = 2\n"),
    ], backend, scorer_stats)


@pytest.mark.parametrize("what", representatives(ATTACKS, ["in-place", "symlink", "tmp-stuck"]))
def test_a_submission_leaves_nothing_for_the_next_step(tmp_path, what, scorer_stats):
    assert_nothing_left(produce_task, tmp_path, what, "local", scorer_stats)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id == "docker"])
def test_a_submission_leaves_nothing_for_the_next_step_on_docker(tmp_path, backend, scorer_stats):
    assert_nothing_left(produce_task, tmp_path, " ".join(ATTACKS), backend, scorer_stats)


def test_a_leftover_reaches_the_next_step_past_a_scratch_that_trusts_itself(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch_sync.Scratch, "sync", trusting_sync)
    run, task = attack_run(tmp_path, "new-names", "local", produce_task)
    together, fresh = later_scores(run, task, "local")
    assert None not in together and together != fresh
