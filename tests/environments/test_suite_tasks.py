"""Every suite task passes the same checks: its folder's contract, its private data kept out of
the workspace, a deterministic ``prepare.py``, and what ``labcoat check-task`` checks (the
reference beats the baseline past the threshold, the anchors hold, the baseline is as recorded).

One parametrised test per check, over ``environments.task.suite.suite_task_dirs()``: a new task is
checked the moment its folder exists. What is really particular to one task (its data's
structure, its eval's gates) lives in ``test_tasks_<name>.py``.
"""

from __future__ import annotations

import pytest

from environments.task.anchors import load_anchors
from environments.task.suite import suite_task_dirs
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

SLOW_PREPARE = {"poglm-hidden-neurons", "online-lp", "dataset-distillation"}  # prepare: 6-25 s
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
