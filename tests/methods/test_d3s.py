"""D3S dataset distillation on digits: teachers, the Gaussian KL, the contract and the accuracy claims."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from methods.d3s import (
    DistillConfig,
    Gaussian,
    accuracy,
    gaussian_kl,
    load_digits_split,
    load_or_train,
    moments,
    regularised,
    student_accuracies,
)
from methods.d3s.distill import distill
from methods.d3s.tools import DistillArgs
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process

STUDENTS = [1, 2, 3]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def split():
    return load_digits_split()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("d3s_cache")


@pytest.fixture(scope="module")
def teachers(split, cache_dir):
    torch.set_num_threads(1)
    return load_or_train(split, [0, 10, 11], bn=True, cache_dir=cache_dir)


def _acc(split, X, targets) -> float:
    accs, _ = student_accuracies(X, targets, split.X_test, split.y_test, STUDENTS)
    return sum(accs) / len(accs)


@pytest.fixture(scope="module")
def ipc1(split, teachers):
    return {m: distill(split, teachers, DistillConfig(ipc=1, method=m)) for m in ("random_real", "dm", "d3s")}


@pytest.fixture(scope="module")
def ipc5(split, teachers):
    return {m: distill(split, teachers, DistillConfig(ipc=5, method=m)) for m in ("random_real", "d3s")}


# --- teachers and the KL ---------------------------------------------------------------------


@pytest.mark.slow  # trains the teachers (~11 s); every claim test that needs them is slow too
def test_teachers_are_accurate(split, teachers):
    for teacher in teachers:
        assert accuracy(teacher, split.X_test, split.y_test) >= 0.97  # spec: 0.99


def test_gaussian_kl():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(16, 16, generator=gen, dtype=torch.float64)
    g = Gaussian(torch.randn(16, generator=gen, dtype=torch.float64), a @ a.T + 0.1 * torch.eye(16, dtype=torch.float64))
    assert float(gaussian_kl(g, g)) < 1e-6
    # 1-d closed form: log(s1/s0) + (s0² + (m0 − m1)²) / (2 s1²) − 1/2
    m0, s0, m1, s1 = 0.3, 0.7, -0.4, 1.9
    one = gaussian_kl(Gaussian(torch.tensor([m0]), torch.tensor([[s0**2]])), Gaussian(torch.tensor([m1]), torch.tensor([[s1**2]])))
    assert float(one) == pytest.approx(math.log(s1 / s0) + (s0**2 + (m0 - m1) ** 2) / (2 * s1**2) - 0.5, rel=1e-6)
    def random_gaussian() -> Gaussian:
        b = torch.randn(4, 4, generator=gen, dtype=torch.float64)
        return Gaussian(torch.randn(4, generator=gen, dtype=torch.float64), b @ b.T + 0.05 * torch.eye(4, dtype=torch.float64))

    for _ in range(100):
        assert float(gaussian_kl(random_gaussian(), random_gaussian())) >= -1e-9
    few = regularised(moments(torch.randn(10, 16, generator=gen)), 0.01)  # singular without ε
    assert math.isfinite(float(gaussian_kl(regularised(moments(torch.randn(500, 16, generator=gen)), 0.01), few)))


# --- the contract ----------------------------------------------------------------------------


@pytest.mark.slow
def test_distilled_set_contract(split, ipc1, ipc5):
    for ipc, results in ((1, ipc1), (5, ipc5)):
        for result in results.values():
            assert result.X.shape == (10 * ipc, 64)
            assert torch.equal(torch.bincount(result.y, minlength=10), torch.full((10,), ipc))
            assert torch.allclose(result.y_soft.sum(1), torch.ones(10 * ipc), atol=1e-5)
    real = ipc5["random_real"]
    assert torch.equal(real.X, split.X_train[real.init_index])
    assert torch.equal(real.y, split.y_train[real.init_index])


@pytest.mark.slow  # needs the teachers (above)
def test_identical_seeds_give_identical_images(split, teachers):
    cfg = DistillConfig(ipc=2, method="d3s", steps=20, init_seed=3)
    assert torch.equal(distill(split, teachers, cfg).X, distill(split, teachers, cfg).X)


@pytest.mark.slow
def test_kl_decreases(ipc1, ipc5):
    assert ipc1["d3s"].kl_final <= 0.5 * ipc1["d3s"].kl_init  # spec: 72 vs 213
    assert ipc5["d3s"].kl_final < 0.05  # spec: 0.000 (the 16-d statistics are matched)


# --- accuracy (init seed 0, students 1-3) ----------------------------------------------------


@pytest.mark.slow
def test_d3s_soft_beats_random_real_at_ipc1(split, ipc1):
    random_hard = _acc(split, ipc1["random_real"].X, ipc1["random_real"].y)
    d3s_soft = _acc(split, ipc1["d3s"].X, ipc1["d3s"].y_soft)
    assert d3s_soft >= random_hard + 0.06  # spec: +0.149


@pytest.mark.slow
def test_dm_beats_random_real_at_ipc1(split, ipc1):
    random_hard = _acc(split, ipc1["random_real"].X, ipc1["random_real"].y)
    assert _acc(split, ipc1["dm"].X, ipc1["dm"].y) >= random_hard + 0.15  # spec: 0.854 vs 0.600


@pytest.mark.slow
def test_d3s_soft_beats_random_real_at_ipc5(split, ipc5):
    random_hard = _acc(split, ipc5["random_real"].X, ipc5["random_real"].y)
    assert _acc(split, ipc5["d3s"].X, ipc5["d3s"].y_soft) >= random_hard + 0.02  # spec: +0.067


# --- the tools end to end --------------------------------------------------------------------


def _tool(entry: str, args: dict, cwd: Path) -> subprocess.CompletedProcess:
    return tool_process("methods.d3s", entry, args=args, cwd=cwd, bare=True)


@pytest.mark.slow  # a tool's whole run in a subprocess: the slow set (fast: its functions' tests)
def test_tools_run_end_to_end(tmp_path, cache_dir, teachers):
    out = tmp_path / "d.npz"
    proc = _tool("distill", {"ipc": 2, "steps": 30, "out": str(out), "cache_dir": str(cache_dir)}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n_images"] == 20 and report["kl_final"] < report["kl_init"]
    with np.load(out) as z:
        assert z["X"].shape == (20, 64) and z["y_soft"].shape == (20, 10)
        assert json.loads(str(z["meta"]))["config"]["ipc"] == 2
    proc = _tool("evaluate_distilled", {"path": str(out), "labels": "soft", "student_seeds": [1, 2], "epochs": 10}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert len(report["acc_per_seed"]) == 2 and 0.0 <= report["acc_mean"] <= 1.0


def test_bad_argument_names_the_field(capsys):
    from methods._tool import main
    from methods.d3s.tools import TOOLS

    assert main(TOOLS, ["distill", "--args", json.dumps({"method": "mtt"})]) == 2
    assert "method" in json.loads(capsys.readouterr().out)["error"]
    with pytest.raises(ValidationError, match="ipc"):
        DistillArgs(ipc=0)


# --- the dataset-distillation task ----------------------------------------------------------

TASK = ROOT / "environments" / "tasks" / "dataset-distillation"


def test_task_data_cannot_be_matched_to_the_bundled_digits():
    """Nearest neighbours in sklearn's copy (raw, or with each image's pixels sorted, which undoes
    a bare permutation) no longer recover the held-out labels."""
    from sklearn.datasets import load_digits

    prepare = th.load_module(TASK / "scripts" / "prepare.py", "dd_prepare")
    X_train, _, X_test, y_test = prepare.transformed_split()
    digits = load_digits()
    bundled = digits.data / 16.0

    def nn_labels(X, ref):
        d2 = (X**2).sum(1)[:, None] - 2 * X @ ref.T + (ref**2).sum(1)[None]
        return digits.target[d2.argmin(1)]

    assert (nn_labels(X_test, bundled) == y_test).mean() < 0.3
    assert (nn_labels(np.sort(X_test, 1), np.sort(bundled, 1)) == y_test).mean() < 0.3
    assert X_train.shape == (1200, 64) and X_test.shape == (597, 64)


def test_task_splits_carve_the_held_out_images(tmp_path):
    """search, select and test are disjoint parts of the 597 held-out images, fixed by the seed
    (test the larger half), and every split's scorer gates a folder without distilled.npz."""
    prepare = th.load_module(TASK / "scripts" / "prepare.py", "dd_prepare")
    parts = prepare.carve(597)
    assert [len(parts[s]) for s in ("search", "select", "test")] == [149, 149, 299]
    assert sorted(np.concatenate(list(parts.values())).tolist()) == list(range(597))
    assert all((parts[s] == prepare.carve(597)[s]).all() for s in parts)
    ev = th.load_module(TASK / "scripts" / "eval.py", "dd_eval")
    assert not set(ev.SPLIT_STUDENT_SEEDS["search"]) & set(ev.SPLIT_STUDENT_SEEDS["test"])
    for score in (ev.get_score, ev.get_search_score, ev.get_select_score):
        assert score(str(tmp_path)) == ev.WORST
