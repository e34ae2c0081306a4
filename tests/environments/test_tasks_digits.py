"""The digits task: prepare -> baseline -> reference, hidden labels, and the secret transform."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from environments.task.anchors import load_anchors
from tests import task_checks as th

NAME = "digits"


def _labels(spec) -> np.ndarray:
    return np.loadtxt(spec.scripts_dir / "test_labels.csv", delimiter=",", skiprows=1)[:, 1]


def test_hparams_are_top_level_assignments_of_train_py():
    spec = th.task_spec(NAME)
    assert spec.baseline is not None and spec.baseline <= 0.85
    assert {h.name for h in spec.hparams} == {"EPOCHS", "LR", "HIDDEN"}
    src = (spec.env_dir / "train.py").read_text()
    for h in spec.hparams:
        assert f"\n{h.name} = " in src, f"{h.name} is not a top-level assignment in train.py"



def test_baseline_leaves_headroom_that_the_reference_takes():
    """The suite's check-task holds the measured baseline to task.toml and the reference to
    anchors.toml; these say the starting script leaves headroom and the reference takes it."""
    spec = th.task_spec(NAME)
    anchors = load_anchors(spec.root)
    assert spec.baseline <= 0.85 < anchors.reference


def test_test_file_has_pixels_and_no_labels(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    header = (ws / "test.csv").read_text().splitlines()[0].split(",")
    assert header == ["id"] + [f"p{i}" for i in range(64)]
    assert len(_labels(task)) == len((ws / "test.csv").read_text().splitlines()) - 1


def test_bundled_copy_does_not_recover_test_labels(prepared_suite_task):
    """A 1-nearest-neighbour lookup against scikit-learn's bundled digits: 100% on an
    untransformed copy, near chance on the task's transformed test images."""
    task = prepared_suite_task(NAME)
    bundled = load_digits()
    x_bundled, y_bundled = bundled.data, bundled.target

    def lookup(queries: np.ndarray) -> np.ndarray:
        d = ((queries[:, None, :] - x_bundled[None, :, :]) ** 2).sum(-1)
        return y_bundled[d.argmin(1)]

    untransformed = x_bundled[::3]
    assert (lookup(untransformed) == y_bundled[::3]).mean() == 1.0

    test = np.loadtxt(task.env_dir / "test.csv", delimiter=",", skiprows=1)
    recovered = (lookup(test[:, 1:]) == _labels(task)).mean()
    assert recovered < 0.25, f"the bundled copy still recovers {recovered:.0%} of test labels"


def test_eval_rejects_a_missing_submission(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    result = th.score(task, ws)
    assert result.value is None and result.failure == "no_submission"
