"""The digits task: prepare -> baseline -> reference, hidden labels, and the secret transform."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from environments.task.anchors import load_anchors
from tests import task_checks as th

NAME = "digits"


def _labels(spec) -> dict[int, int]:
    """id -> label of every held-out image, over the three private splits' files."""
    out = {}
    for split in ("search", "select", "test"):
        (path,) = spec.splits[split].data
        rows = np.loadtxt(spec.scripts_dir / path, delimiter=",", skiprows=1, dtype=int)
        out.update(zip(rows[:, 0].tolist(), rows[:, 1].tolist()))
    return out


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
    ids = np.loadtxt(ws / "test.csv", delimiter=",", skiprows=1, usecols=0, dtype=int)
    assert sorted(ids) == sorted(_labels(task)) == list(range(700))


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
    labels = _labels(task)
    recovered = (lookup(test[:, 1:]) == [labels[int(i)] for i in test[:, 0]]).mean()
    assert recovered < 0.25, f"the bundled copy still recovers {recovered:.0%} of test labels"


def test_eval_rejects_a_missing_submission(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    result = th.score(task, ws)
    assert result.value is None and result.failure == "no_submission"


def test_splits_share_the_held_out_images_and_score_alike(prepared_suite_task, tmp_path):
    """The 700 held-out images are split 175 search, 175 select, 350 test, with ids shuffled
    over the pool (an id says nothing of its split); each split's function scores its own
    images, and a nearest-centroid guess beats a constant one on each."""
    task = prepared_suite_task(NAME)
    module = th.load_eval(task)
    members = {s: module.split_members(s) for s in ("search", "select", "test")}
    assert {s: len(m) for s, m in members.items()} == {"search": 175, "select": 175, "test": 350}
    assert sorted(sum(members.values(), [])) == list(range(700))
    assert all(max(m) - min(m) > 600 for m in members.values())
    train = np.loadtxt(task.env_dir / "train.csv", delimiter=",", skiprows=1)
    test = np.loadtxt(task.env_dir / "test.csv", delimiter=",", skiprows=1)
    centroids = np.stack([train[train[:, 0] == d, 1:].mean(0) for d in range(10)])
    nearest = ((test[:, None, 1:] - centroids[None]) ** 2).sum(-1).argmin(1)
    scores = {}
    for guess, labels in (("constant", np.zeros(len(test), int)), ("centroid", nearest)):
        ws = tmp_path / guess
        ws.mkdir()
        (ws / "submission.csv").write_text("id,label\n" + "".join(
            f"{int(i)},{y}\n" for i, y in zip(test[:, 0], labels)))
        scores[guess] = [module.get_search_score(ws), module.get_select_score(ws),
                         module.get_score(ws)]
    assert all(c > k + 0.2 for c, k in zip(scores["centroid"], scores["constant"])), scores
