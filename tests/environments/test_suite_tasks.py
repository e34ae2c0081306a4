"""Every suite task passes the same checks: its folder's contract, its private data kept out of
the workspace, a deterministic ``prepare.py``, what ``labcoat check-task`` checks (the
reference beats the baseline past the threshold, the anchors hold, the baseline is as recorded),
and the three private splits of hidden consistent evaluation (declared with what each is, made
of disjoint ids or seeds, fixed, scored by their own functions, out of the actor's reach). The
split checks share this module's prepared copies, so one worker prepares a task once.

One parametrised test per check, over ``environments.task.suite.suite_task_dirs()``: a new task is
checked the moment its folder exists. What is really particular to one task (its data's
structure, its eval's gates) lives in ``test_tasks_<name>.py``.
"""

from __future__ import annotations

import json
import sys

import pytest

from environments.task.anchors import load_anchors
from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.splits import MEMBERS, SPLITS, function_for
from environments.task.suite import suite_task_dirs
from sandbox import open_sandbox
from tests import task_checks as th

TASKS = [p.name for p in suite_task_dirs()]

TIMED_CHECK = {
    # a speedup measured against the clock belongs in the serial set, never beside another
    # xdist worker (llama-inference failed its interval under CPU contention here)
    "llama-inference", "vectorization",
}
FAST_CHECK = {
    # check-task in README's fast set: the headline task and a method task that scores in
    # seconds stand in for the rest (each task's own test_tasks_<name>.py or method test holds
    # its data and eval gates fast); the other tasks' check-task (5-50 s each) is in the slow set
    "digits", "offline-irl",
}
SLOW_CHECK = TIMED_CHECK | (set(TASKS) - FAST_CHECK)


def _params(names, slow=frozenset(), serial=frozenset()):
    def marks(name):
        return ([pytest.mark.slow] if name in slow else []) + ([pytest.mark.serial] if name in serial else [])
    return [pytest.param(n, marks=marks(n)) for n in names]


def _has_prepare(name: str) -> bool:
    """Read off the folder, not ``load_task``: a broken task fails its own tests, not collection."""
    return (th.TASKS_DIR / name / "scripts" / "prepare.py").is_file()


PUBLIC_ONLY = {"local-learning", "mtgcn-heterophily", "sparse-robustness", "bfn-fast-sampling"}
"""Tasks whose ``prepare.py`` writes only public data (eval makes or holds its test data, or,
as bfn-fast-sampling, draws its secret transform itself)."""

SLOW_PREPARE = {"poglm-hidden-neurons", "online-lp", "dataset-distillation",  # prepare: 6-25 s
                # three splits' data (sets, tasks, reference samples): 10-30 s on a loaded box
                "bfn-fast-sampling", "label-free-accuracy", "lora-routing"}
FAST_DETERMINISM = {"clrs-sorting", "house-price", "imdb", "ogbn-arxiv", "parkinsons", "q-bias"}
"""Preparing again to compare bytes costs a second prepare: in the fast set only where that is
under a second; the fast set still prepares every other task (no private data, above)."""

PREPARED = [n for n in TASKS if _has_prepare(n)]


def test_the_suite_is_all_here():
    """A task folder that fails to load would silently drop out of every check below."""
    assert len(TASKS) >= 20 and {"digits", "vectorization", "q-bias"} <= set(TASKS)
    for subset in (set(th.TOLERANCE), FAST_CHECK, PUBLIC_ONLY, SLOW_PREPARE, FAST_DETERMINISM):
        assert subset <= set(TASKS), subset - set(TASKS)


@pytest.mark.parametrize("name", TASKS)
def test_task_folder_keeps_the_contract(name):
    spec = th.task_spec(name)
    assert spec.name == name and spec.research_problem.strip()
    assert spec.eval_path.is_file()
    assert spec.reference_dir.is_dir() and any(spec.reference_dir.iterdir()), "no reference/"
    if spec.timed:  # a runtime depends on the machine: measured where it is scored, never fixed
        assert spec.baseline is None
    else:
        assert spec.baseline is not None, f"{name}: task.toml records no baseline"
        anchors = load_anchors(spec.root)
        assert anchors is not None and anchors.baseline == pytest.approx(spec.baseline), (
            f"{name}: anchors.toml's baseline is not task.toml's")


@pytest.mark.parametrize("name", _params(PREPARED, SLOW_PREPARE))
def test_no_private_data_in_the_workspace(name, prepared_suite_task, tmp_path):
    spec = prepared_suite_task(name)
    if name in PUBLIC_ONLY:  # the day it writes private data, it must be checked like the rest
        assert not th.private_files(spec), f"{name} now has private data: drop it from PUBLIC_ONLY"
        return
    th.assert_no_private_data_in(spec, th.make_workspace(spec, tmp_path / "ws"))


@pytest.mark.parametrize("name", _params(PREPARED, set(PREPARED) - FAST_DETERMINISM))
def test_prepare_is_deterministic(name, prepared_suite_task, tmp_path):
    th.assert_deterministic(prepared_suite_task(name), tmp_path)


@pytest.mark.parametrize("name", _params(TASKS, SLOW_CHECK, TIMED_CHECK))
def test_check_task(name):
    """``labcoat check-task``'s claims, through labcoat's own prepare/solve/score path, and the
    baseline as task.toml records it (``tests/task_checks.py``: measured once a session)."""
    th.assert_check_task(name)


# ---- the private splits (environments/task/splits.py): declared, disjoint, fixed, out of reach

# a task whose prepare takes 6-25 s is checked in the slow set (its folder test stays fast)
PREPARED_FAST = [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW_PREPARE else [])
                 for n in TASKS]


def split_members_of(spec) -> dict[str, list]:
    """``split_members`` of each split, from a fresh import of the prepared eval.py."""
    sys.path.insert(0, str(spec.scripts_dir))
    try:
        module = th.load_eval(spec)
        return {s: json.loads(json.dumps(getattr(module, MEMBERS)(s))) for s in SPLITS}
    finally:
        sys.path.remove(str(spec.scripts_dir))


def key(item) -> str:
    return json.dumps(item, sort_keys=True)


@pytest.mark.parametrize("name", TASKS)
def test_the_task_declares_three_splits_and_scores_each(name):
    spec = th.task_spec(name)
    assert spec.split_names == SPLITS, f"{name}: declares {spec.split_names}"
    for split in SPLITS:
        assert spec.splits[split].about.strip(), f"{name}: [splits.{split}] says nothing of itself"
    source = spec.eval_path.read_text()
    two_phase = (spec.scripts_dir / "produce.py").is_file()
    for split in SPLITS:
        assert f"def {function_for(split, two_phase)}" in source
    assert f"def {MEMBERS}" in source


@pytest.mark.parametrize("name", PREPARED_FAST)
def test_the_splits_are_disjoint_and_fixed(name, prepared_suite_task):
    spec = prepared_suite_task(name)
    found = split_members_of(spec)
    for split, items in found.items():
        assert items, f"{name}: the {split} split is empty"
        assert len({key(i) for i in items}) == len(items), f"{name}: {split} repeats a member"
    for a, b in (("search", "select"), ("search", "test"), ("select", "test")):
        shared = {key(i) for i in found[a]} & {key(i) for i in found[b]}
        assert not shared, f"{name}: {a} and {b} share {sorted(shared)[:5]}"
    assert split_members_of(spec) == found, f"{name}: the splits change from one import to the next"
    for split in SPLITS:
        for rel in spec.splits[split].data:
            assert (spec.scripts_dir / rel).exists(), f"{name}: {split}'s data {rel} is not there"
            assert not (spec.env_dir / rel).exists(), f"{name}: {rel} is in the public env/"


@pytest.mark.slow  # the fast set's test_prepare_is_deterministic already prepares the cheap ones again
@pytest.mark.parametrize("name", [n for n in TASKS if _has_prepare(n)])
def test_a_second_prepare_makes_the_same_splits(name, prepared_suite_task, tmp_path):
    """Fixed by the task's seed: another machine preparing the task gets the same splits."""
    again = th.prepared_task(name, tmp_path / "cache")
    first = prepared_suite_task(name)
    assert split_members_of(again) == split_members_of(first)
    for split in SPLITS:
        for rel in first.splits[split].data:
            a, b = first.scripts_dir / rel, again.scripts_dir / rel
            if a.is_file():
                assert a.read_bytes() == b.read_bytes(), f"{name}: {split}'s {rel} differs"


@pytest.mark.parametrize("name", PREPARED_FAST)
def test_the_split_data_is_not_readable_from_the_actors_sandbox(name, prepared_suite_task, tmp_path):
    """By host path or where a scorer sees it (the workspace's own contents are
    test_no_private_data_in_the_workspace's)."""
    spec = prepared_suite_task(name)
    paths = [spec.scripts_dir / rel for s in SPLITS for rel in spec.splits[s].data]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "canary").write_text("the probe reads what is there")
    probe = ("import sys\nfor p in sys.argv[1:]:\n"
             "    try:\n        open(p, 'rb').read(1); print('READ', p)\n"
             "    except OSError as e:\n        print('no', p, type(e).__name__)\n")
    guesses = [str(p) for p in paths] + [f"/task/scripts/{p.name}" for p in paths] + [
        "/task/scripts/eval.py"]
    with open_sandbox("local", workspace, sandbox_limits(spec), code_mounts()) as sb:
        canary = f"{sb.workdir}/canary"
        r = sb.exec([sb.python, "-c", probe, canary, *guesses])
    assert r.exit_code == 0, r.stderr
    assert f"READ {canary}" in r.stdout, r.stdout  # the probe sees a file that is there
    assert r.stdout.count("READ") == 1, f"{name}: the actor's sandbox reads {r.stdout}"
