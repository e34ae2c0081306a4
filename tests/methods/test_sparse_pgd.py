"""Sparse-PGD: the spec's claims at CPU scale (digits MLP), plus invariants.

Fixture: sklearn digits /16, (N,1,8,8), 70/30 stratified split (seed 0); MLP 64-256-256-10,
Adam 1e-3, 30 epochs, batch 64, torch.manual_seed(0), one thread. sAT: k_train = 5,
10 sPGD iterations, proj/unproj at random per batch, 30 epochs.

Measured here (robust accuracy %, 540 test images; clean 97.8 standard, 96.3 sAT):

    k | sPGD ens (100 it) | saliency | Sparse-RS (300 q) | random noise (100) | sAA (100/100/300)
    2 |      20.6         |   27.6   |       23.0        |       55.9         |     19.8
    3 |       1.5         |    6.1   |        3.9        |       42.4         |      1.3
    sAT at k = 3: sPGD ens 36.3 (standard 1.5), sAA 35.4.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from methods.sparse_pgd.data import digits_split
from methods.sparse_pgd.evaluate import (
    AttackConfig,
    AttackResult,
    l0_pixels,
    predict,
    run_attack,
)
from methods.sparse_pgd.models import DigitsMLP, SmallCNN, train_standard
from methods.sparse_pgd.run import attack_tool
from methods.sparse_pgd.spgd import (
    SparsePerturbation,
    per_sample_loss,
    spgd_batch,
    topk_mask,
)
from methods.sparse_pgd.streams import SampleStreams
from methods.sparse_pgd.tools import AttackArgs
from methods.sparse_pgd.training import adversarial_train
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process

RS_QUERIES = 300  # the spec's table uses 300 queries for stand-alone Sparse-RS


@pytest.fixture(scope="session")
def digits():
    torch.set_num_threads(1)
    return [torch.from_numpy(a) for a in digits_split()]


@pytest.fixture(scope="session")
def std_model(digits):
    X_tr, y_tr, _, _ = digits
    torch.manual_seed(0)
    return train_standard(DigitsMLP(), X_tr, y_tr, epochs=30, lr=1e-3, batch_size=64, seed=0)


@pytest.fixture(scope="session")
def sat_model(digits):
    X_tr, y_tr, _, _ = digits
    torch.manual_seed(0)
    model = DigitsMLP()
    adversarial_train(model, X_tr, y_tr, recipe="sat", k_train=5, attack_iters=10, epochs=30, seed=0)
    return model


@pytest.fixture(scope="session")
def std_results(std_model, digits):
    """Every attack on the standard model, computed once and shared by the tests below."""
    _, _, X, y = digits
    out: dict[tuple[str, int], AttackResult] = {}
    for k in (2, 3):
        for method in ("spgd_ens", "saliency"):
            out[(method, k)] = run_attack(std_model, X, y, method, AttackConfig(k=k))
    out[("noise", 2)] = run_attack(std_model, X, y, "noise", AttackConfig(k=2))
    cfg = AttackConfig(k=2, rs_queries=RS_QUERIES)
    out[("rs", 2)] = run_attack(std_model, X, y, "rs", cfg)
    out[("saa", 2)] = run_attack(std_model, X, y, "saa", cfg)
    return out


def assert_invariants(model, X, y, result: AttackResult, k: int) -> None:
    """Spec invariant 5: per-pixel l0 <= k, the box, and success == one fresh forward pass."""
    assert int(l0_pixels(result.x_adv, X).max()) <= k
    assert float(result.x_adv.min()) >= 0.0 and float(result.x_adv.max()) <= 1.0
    assert torch.equal(result.success, predict(model, result.x_adv) != y)


def test_spgd_far_stronger_than_random_noise(std_results):
    ens, noise = std_results[("spgd_ens", 2)], std_results[("noise", 2)]
    assert ens.robust_acc <= noise.robust_acc - 0.25  # measured gap 35.3 points


@pytest.mark.parametrize("k", [2, 3])
def test_spgd_not_weaker_than_one_shot_saliency(std_results, k):
    assert std_results[("spgd_ens", k)].robust_acc <= std_results[("saliency", k)].robust_acc + 0.02


def test_saa_cascade_only_removes_survivors(std_results, digits):
    n = len(digits[3])
    saa, ens, rs = std_results[("saa", 2)], std_results[("spgd_ens", 2)], std_results[("rs", 2)]
    assert saa.robust_acc <= min(ens.robust_acc, rs.robust_acc) + 1.0 / n
    counts = list(saa.stages.values())
    assert list(saa.stages) == ["clean", "spgd", "spgd_proj", "rs"]
    assert counts == sorted(counts, reverse=True)
    assert counts[-1] == int((~saa.success).sum())


def test_every_attack_keeps_the_invariants(std_results, std_model, digits):
    _, _, X, y = digits
    for (_, k), result in std_results.items():
        assert_invariants(std_model, X, y, result, k)


@pytest.mark.slow
def test_sparse_adversarial_training_raises_robustness(std_results, sat_model, digits):
    _, _, X, y = digits
    sat = run_attack(sat_model, X, y, "spgd_ens", AttackConfig(k=3))
    assert_invariants(sat_model, X, y, sat, 3)
    assert float((predict(sat_model, X) == y).float().mean()) >= 0.90
    assert sat.robust_acc >= std_results[("spgd_ens", 3)].robust_acc + 0.15


@pytest.mark.parametrize("projected", [False, True])
def test_backward_passes_match_the_paper(projected):
    torch.manual_seed(1)
    model = DigitsMLP().eval()
    x = torch.rand(6, 1, 8, 8)
    y = torch.randint(0, 10, (6,))
    p = torch.randn(6, 1, 8, 8, requires_grad=True)
    m = torch.randn(6, 1, 8, 8, requires_grad=True)
    delta = SparsePerturbation.apply(p, m, 4, projected)
    g_p, g_m = torch.autograd.grad(per_sample_loss(model(x + delta), y).sum(), [p, m])

    mask = topk_mask(m.detach(), 4)
    d = (p.detach() * mask).requires_grad_(True)
    (g_delta,) = torch.autograd.grad(per_sample_loss(model(x + d), y).sum(), [d])
    s = torch.sigmoid(m.detach())
    expected_p = g_delta * (mask if projected else s)
    assert torch.allclose(g_p, expected_p, atol=1e-6)
    expected_m = (g_delta * p.detach()).sum(1, keepdim=True) * s * (1 - s)
    assert torch.allclose(g_m, expected_m, atol=1e-6)
    assert torch.equal(mask.flatten(1).sum(1), torch.full((6,), 4.0))
    assert int((delta.detach() != 0).flatten(1).sum(1).max()) <= 4


def test_sample_outcome_does_not_depend_on_its_batch(std_model, digits):
    _, _, X, y = digits
    ids = torch.arange(40)
    full_x, full_f = spgd_batch(std_model, X[:40], y[:40], 2, SampleStreams(7, ids), iters=20)
    pick = torch.tensor([3, 11, 25, 38])
    sub_x, sub_f = spgd_batch(std_model, X[pick], y[pick], 2, SampleStreams(7, pick), iters=20)
    assert torch.equal(full_f[pick], sub_f)
    assert torch.allclose(full_x[pick], sub_x, atol=1e-5)


@pytest.fixture(scope="session")
def cnn_checkpoint(digits, tmp_path_factory):
    X_tr, y_tr, _, _ = digits
    torch.manual_seed(0)
    model = train_standard(SmallCNN(), X_tr, y_tr, epochs=5, seed=0)
    path = tmp_path_factory.mktemp("cnn") / "cnn.pt"
    torch.save(model.state_dict(), path)
    return path


def test_any_classifier_path_with_a_small_cnn(cnn_checkpoint, digits, tmp_path, monkeypatch):
    _, _, X, y = digits
    monkeypatch.chdir(tmp_path)
    model = SmallCNN()
    model.load_state_dict(torch.load(cnn_checkpoint, weights_only=True))
    model.eval()
    robust = {}
    for k in (1, 5):
        args = AttackArgs(
            model="methods.sparse_pgd.models:SmallCNN",
            checkpoint=str(cnn_checkpoint),
            l0_budget=k,
            method="saa",
            steps=50,
            rs_queries=200,
            out=f"cnn_k{k}.npz",
        )
        report = attack_tool(args)
        with np.load(report["success_mask_npz"]) as f:
            result = AttackResult(torch.from_numpy(f["x_adv"]), torch.from_numpy(f["success"]))
        assert_invariants(model, X, y, result, k)
        assert report["max_l0"] <= k
        robust[k] = report["robust_acc"]
    assert robust[5] < robust[1]


def _tool(args: dict, cwd: Path, entry: str = "attack") -> subprocess.CompletedProcess:
    return tool_process("methods.sparse_pgd", entry, args=args, cwd=cwd)


def test_tool_end_to_end_on_a_workspace_model(std_model, tmp_path):
    (tmp_path / "model.py").write_text(
        "from methods.sparse_pgd.models import DigitsMLP\n\ndef Net():\n    return DigitsMLP()\n"
    )
    torch.save(std_model.state_dict(), tmp_path / "model.pt")
    args = {"model": "model:Net", "checkpoint": "model.pt", "l0_budget": 2, "method": "spgd", "steps": 30}
    proc = _tool(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n"] == 540 and report["max_l0"] <= 2
    assert report["per_stage_survivors"]["clean"] >= report["per_stage_survivors"]["spgd"]
    assert 0.0 <= report["robust_acc"] < report["clean_acc"]
    assert (tmp_path / report["success_mask_npz"]).exists()


def test_bad_argument_names_the_field(tmp_path):
    proc = _tool({"l0_budget": 2, "method": "pgd"}, tmp_path)
    assert proc.returncode == 2
    assert "method" in json.loads(proc.stdout)["error"]
    proc = _tool({"l0_budget": 2, "data": "missing.npz"}, tmp_path)
    assert proc.returncode == 2
    assert "data" in json.loads(proc.stdout)["error"]


# --- the task: sparse-robustness -------------------------------------------------------------

TASK = ROOT / "environments" / "tasks" / "sparse-robustness"


def test_task_held_out_images_cannot_be_looked_up_in_the_bundled_copy():
    """1-NN against sklearn's bundled digits recovers every held-out label without the secret
    permutation (exact copies) and few with it (measured: 1.00 vs 0.14)."""
    from sklearn.datasets import load_digits
    from sklearn.neighbors import KNeighborsClassifier

    ev = th.load_module(TASK / "scripts" / "eval.py", "sparse_robustness_eval")
    bundled = load_digits()
    knn = KNeighborsClassifier(n_neighbors=1).fit(bundled.data / 16.0, bundled.target)
    X_te, y_te = ev.split("test")
    _, _, X_plain, y_plain = digits_split()
    assert knn.score(X_plain.reshape(len(X_plain), -1), y_plain) == 1.0
    assert knn.score(X_te.reshape(len(X_te), -1), y_te) < 0.4


def test_task_splits_cut_the_held_out_digits():
    """search 120, select 120, test 300: the 540 held-out images, stratified, fixed by a seed
    (the digits cannot grow; task.toml's baseline was re-measured on the 300)."""
    ev = th.load_module(TASK / "scripts" / "eval.py", "sparse_robustness_eval")
    members = {s: ev.split_members(s) for s in ("search", "select", "test")}
    assert {s: len(m) for s, m in members.items()} == {"search": 120, "select": 120, "test": 300}
    assert sorted(sum(members.values(), [])) == list(range(540))
    y = digits_split()[3]
    for m in members.values():
        assert np.bincount(y[m], minlength=10).min() >= 10  # every digit in every split
    assert ev.split_members("test") == members["test"]
    assert len(ev.split("search")[0]) == 120
