"""Issue 37, classes 1 and 3, end to end: nothing a timed repeat or an ``--all-steps`` step
leaves (a folder's mtime, a folder its uid cannot empty in ``/tmp`` or ``/dev/shm``) reaches
the next one, so a submission cannot skip work by smuggling, and a two-phase task's step
scores with ``--all-steps`` as it does alone. Each defence is then taken away (the reset
mutated) and the same attack gets through: the defence is what stops it.
"""

from __future__ import annotations

import textwrap

import pytest

from environments.scoring import scratch_sync
from environments.scoring.evaluate import evaluate
from environments.task.spec import load_task
from sandbox.local import LocalSandbox
from tests.conftest import write_task
from tests.environments.test_scoring_steps import (
    EMPTY_TMP,
    FINGERPRINT_EVAL,
    assert_nothing_left,
    attack_run,
    later_scores,
)
from tests.environments.test_seam import TIMED_EVAL, TIMED_PRODUCE
from tests.sandbox.backends import LOCAL_AND_SLOW_DOCKER

# --- a llama-inference-like timed submission: it skips its work once it finds a note -------

WORK = 0.25  # seconds of "inference" per call, the pristine env/'s too
PRISTINE = f"import time\ndef run(challenge):\n    time.sleep({WORK})\n    return challenge.strip()[::-1]\n"
SMUGGLER = textwrap.dedent(f'''
    import os, pathlib, time
    WS = pathlib.Path(__file__).resolve().parent
    MAGIC = 4242424242 * 10**9
    CHANNEL = {{channel!r}}

    def noted():
        if CHANNEL == "folder-mtime":
            return (WS / "pkg").stat().st_mtime_ns == MAGIC
        return os.path.exists("/dev/shm/stuck/warm")

    def note():
        if CHANNEL == "folder-mtime":
            os.utime(WS / "pkg", ns=(MAGIC, MAGIC))
        else:
            os.makedirs("/dev/shm/stuck", exist_ok=True)
            open("/dev/shm/stuck/warm", "w").close()
            os.chmod("/dev/shm/stuck", 0o555)

    def run(challenge):
        if not noted():  # the "model" is not warm yet: the work, once
            time.sleep({WORK})
        note()
        return challenge.strip()[::-1]
''')


def smuggle(tmp_path, channel: str, sandbox: str = "local"):
    toml = 'metric = "seconds"\ndirection = "lower"\nsuccess_threshold = 0.1\nsolve = []\ntimed = true\n'
    task = load_task(write_task(tmp_path / "timed", toml=toml, eval_body=TIMED_EVAL, read_only="",
                                files={"scripts/produce.py": TIMED_PRODUCE, "env/fast.py": PRISTINE}))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pkg").mkdir(parents=True)
    (ws / "fast.py").write_text(SMUGGLER.format(channel=channel))
    result = evaluate(task, ws, sandbox)
    assert result.paired is not None, result.detail
    return result.paired


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("channel", ["folder-mtime", "tmp-stuck"])
def test_a_timed_submission_cannot_skip_its_work_by_a_note_to_the_next_repeat(tmp_path, channel):
    paired = smuggle(tmp_path, channel)
    assert paired.improvement_low < 0.1, paired  # no success: every repeat did the work


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize(("channel", "mutation"), [("folder-mtime", "folder times kept"),
                                                   ("tmp-stuck", "emptying instead of renewing")])
def test_the_note_gets_through_a_mutated_reset(tmp_path, monkeypatch, channel, mutation):
    if mutation == "folder times kept":
        monkeypatch.setattr(scratch_sync.Scratch, "_put_folders_back", lambda self, wanted: None)
    else:
        monkeypatch.setattr(LocalSandbox, "renew", lambda self: self.exec(EMPTY_TMP, timeout=60))
    paired = smuggle(tmp_path, channel)
    assert paired.improvement_low > 0.1, paired  # the faked success the audit found


# --- a federated-partition-like two-phase task under --all-steps ---------------------------

FP_PRODUCE = textwrap.dedent("""
    import json, sys
    from methods._submission import load_submission
    def produce(workspace, here, out):
        sys.dont_write_bytecode = True  # a .pyc holds its source's mtime: each lay's own
        fp = load_submission(workspace, "fp.py")
        (out / "value.json").write_text(json.dumps(fp.get_score(str(workspace))))
""")
FP_EVAL = textwrap.dedent("""
    import json, os
    def score(folder):
        return float(json.load(open(os.path.join(folder, "value.json"))))
""")
FOLDER_ATTACKS = "folder-mtime folder-size root-mode tmp-stuck"


def two_phase_task(root):
    """The submission's own code (``fp.py``, read-only here so each step runs the same)
    fingerprints what it can see, carried notes included, and plants ``attack.txt``'s."""
    return write_task(root, eval_body=FP_EVAL, read_only="data.txt\nfp.py\n", files={
        "scripts/produce.py": FP_PRODUCE, "env/fp.py": FINGERPRINT_EVAL,
        "env/sub/keep_me.txt": "pristine\n"})


@pytest.mark.parametrize("backend", LOCAL_AND_SLOW_DOCKER)
def test_a_two_phase_tasks_steps_score_as_alone_after_folder_notes(tmp_path, backend, scorer_stats):
    assert_nothing_left(two_phase_task, tmp_path, FOLDER_ATTACKS, backend, scorer_stats)


def test_the_two_phase_steps_leak_past_a_mutated_reset(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch_sync.Scratch, "_put_folders_back", lambda self, wanted: None)
    run, task = attack_run(tmp_path, "folder-mtime", "local", two_phase_task)
    together, fresh = later_scores(run, task, "local")
    assert None not in together and together != fresh
