"""SGR local learning: the spec's "Tests that must hold" on the digits split, at depth 8."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import pytest
import torch

from methods.sgr_local import (
    LocalNet,
    TrainConfig,
    load_digits_split,
    local_rule,
    sgr_penalty,
    sgr_rule,
    train,
)
from methods.sgr_local.run import local_learning_train
from methods.sgr_local.tools import LocalLearningTrainArgs
from methods.sgr_local.training import local_step
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process


def _report(**kw) -> dict:
    torch.set_num_threads(1)
    return local_learning_train(LocalLearningTrainArgs(**kw))


@pytest.fixture(scope="session")
def depth8_runs() -> dict[tuple[str, int], dict]:
    runs = {(m, s): _report(method=m, depth=8, seed=s) for m in ("local", "sgr") for s in (0, 1)}
    runs[("bp", 0)] = _report(method="bp", depth=8, seed=0)
    return runs


@pytest.fixture(scope="module")
def split():
    return load_digits_split()


def test_digits_split_sizes(split):
    assert split.X_train.shape == (1257, 64) and split.X_test.shape == (540, 64)
    assert float(split.X_train.max()) <= 1.0


# ------------------------------------------------------------------------------- 1. isolation


@pytest.mark.slow
def test_isolation_flag(depth8_runs):
    for method in ("local", "sgr"):
        assert all(depth8_runs[(method, s)]["isolation_ok"] for s in (0, 1))


@pytest.mark.parametrize("rule", [local_rule, sgr_rule], ids=["local", "sgr"])
def test_module_loss_touches_only_its_own_parameters(split, rule):
    torch.manual_seed(0)
    model = LocalNet(64, 16, 4, 10, seed=0)
    owner = {id(p): i for i in range(model.depth) for p in model.module_parameters(i)}
    current, hits = [None], []
    for p in model.parameters():
        p.register_hook(lambda g, p=p: hits.append((current[0], owner[id(p)], bool(g.ne(0).any()))))

    def tracked(ctx):
        current[0] = ctx.index
        return rule(ctx)

    local_step(model, split.X_train[:32], split.y_train[:32], tracked, check_isolation=False)
    assert {h[0] for h in hits} == set(range(4))  # every module produced gradients
    assert all(running == own for running, own, nonzero in hits if nonzero)


# ---------------------------------------------------------------------- 2. penalty gradient


def test_penalty_gradient_matches_finite_differences():
    torch.manual_seed(0)
    block, head = torch.nn.Linear(5, 5).double(), torch.nn.Linear(5, 4).double()
    h_in = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 2, 3])
    g_out = torch.randn(3, 5, dtype=torch.float64)

    def penalty() -> torch.Tensor:
        return sgr_penalty(h_in, head(torch.relu(block(h_in))), y, g_out)

    (grad,) = torch.autograd.grad(penalty(), block.weight)
    numeric = torch.zeros_like(grad)
    eps = 1e-6
    with torch.no_grad():
        for i in range(5):
            for j in range(5):
                block.weight[i, j] += eps
                with torch.enable_grad():
                    up = penalty().item()
                block.weight[i, j] -= 2 * eps
                with torch.enable_grad():
                    down = penalty().item()
                block.weight[i, j] += eps
                numeric[i, j] = (up - down) / (2 * eps)
    assert torch.allclose(grad, numeric, rtol=1e-4, atol=1e-8), (grad - numeric).abs().max()


# ---------------------------------------------------------------------------------- 3. λ = 0


def test_lambda_zero_equals_local(split):
    torch.set_num_threads(1)
    cfg = TrainConfig(epochs=1, measure_memory=False)
    a = train(LocalNet(64, 64, 4, 10, seed=3), split, cfg, local_rule).model
    b = train(LocalNet(64, 64, 4, 10, seed=3), split, cfg, functools.partial(sgr_rule, lam=0.0))
    for (name, p), q in zip(a.named_parameters(), b.model.parameters()):
        assert torch.equal(p, q), name


# ------------------------------------------------------------------ 4-7. the measured claims


def _mean(runs, method, key):
    return sum(runs[(method, s)][key] for s in (0, 1)) / 2


@pytest.mark.slow
def test_sgr_reconciles_gradients(depth8_runs):
    gain = _mean(depth8_runs, "sgr", "grad_cosine_mean") - _mean(depth8_runs, "local",
                                                                  "grad_cosine_mean")
    assert gain >= 0.15
    assert len(depth8_runs[("sgr", 0)]["grad_cosine_per_boundary"]) == 7


@pytest.mark.slow
def test_sgr_accuracy_at_least_local(depth8_runs):
    assert _mean(depth8_runs, "sgr", "test_acc") >= _mean(depth8_runs, "local", "test_acc")


@pytest.mark.slow
def test_local_memory_ratio(depth8_runs):
    for method in ("local", "sgr"):
        for s in (0, 1):
            run = depth8_runs[(method, s)]
            assert run["saved_bytes_bp"] > 0 and run["saved_bytes_ratio"] <= 0.6


@pytest.mark.slow
def test_bp_sanity(depth8_runs):
    bp = depth8_runs[("bp", 0)]
    assert bp["test_acc"] >= 0.90
    assert bp["grad_cosine_mean"] is None and bp["saved_bytes_ratio"] == 1.0


@pytest.mark.slow
def test_reconciliation_at_depth_16():
    runs = {(m, s): _report(method=m, depth=16, seed=s) for m in ("local", "sgr") for s in (0, 1)}
    assert _mean(runs, "sgr", "grad_cosine_mean") - _mean(runs, "local", "grad_cosine_mean") >= 0.15


# ------------------------------------------------------------------- 8. tool, determinism


def _tool(args: dict, cwd: Path) -> subprocess.CompletedProcess:
    return tool_process("methods.sgr_local", args=args, cwd=cwd)


@pytest.mark.slow  # a tool's whole run in a subprocess: the slow set (fast: its functions' tests)
def test_tool_end_to_end(tmp_path):
    args = {"depth": 3, "width": 16, "epochs": 2, "method": "sgr", "out": "ckpt.pt"}
    res = _tool(args, tmp_path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert (tmp_path / report["checkpoint"]).exists()
    assert len(report["epoch_log"]) == 2 and "penalty" in report["epoch_log"][0]
    assert report["isolation_ok"] and 0 < report["saved_bytes_ratio"] < 1


def test_same_arguments_same_report():
    args = {"depth": 3, "width": 16, "epochs": 2, "method": "sgr"}
    a, b = _report(**args), _report(**args)
    assert a == b  # in-process reports carry no "seconds" (the CLI adds it)


def test_tool_bad_arguments_name_the_field(tmp_path):
    for args, field in (({"depth": 1, "method": "sgr"}, "depth"), ({"sgr_weight": -1}, "sgr_weight")):
        res = _tool(args, tmp_path)
        assert res.returncode == 2 and field in json.loads(res.stdout)["error"], res.stdout
    with pytest.raises(FileNotFoundError, match="data"):  # the CLI reports it with exit 2
        _report(data=str(tmp_path / "missing.npz"))


def test_cosine_distance_runs(split):
    torch.set_num_threads(1)
    rule = functools.partial(sgr_rule, distance="cosine")
    res = train(LocalNet(64, 16, 3, 10, seed=0), split, TrainConfig(epochs=1), rule)
    assert res.isolation_ok and 0 < res.epoch_log[0]["penalty"] <= 2.0


# ------------------------------------------------------------------------------- the task


def _task_transform():
    path = ROOT / "environments" / "tasks" / "local-learning" / "scripts" / "digits_transform.py"
    return th.load_module(path, "local_learning_digits_transform")


def test_task_data_cannot_be_looked_up_in_the_bundled_digits():
    from sklearn.datasets import load_digits

    X_tr, y_tr, X_te, y_te = _task_transform().transformed_split()
    assert X_tr.shape == (1257, 64) and X_te.shape == (540, 64)
    bundled, labels = load_digits(return_X_y=True)
    bundled = torch.as_tensor(bundled / 16.0)
    for X, y in ((X_te, y_te), (X_tr, y_tr)):
        nearest = torch.cdist(torch.as_tensor(X, dtype=torch.float64), bundled).argmin(dim=1)
        assert float((torch.as_tensor(labels)[nearest] == torch.as_tensor(y)).double().mean()) < 0.3


def test_task_splits_share_the_held_out_pool_in_thirds():
    """digits cannot grow: search, select and test are disjoint thirds of the 540 held-out
    images (fixed by the task's secret seed), each trained with its own seeds, the same table in
    both phases (produce.py cannot import eval.py)."""
    transform = _task_transform()
    parts = [set(transform.heldout_index(split).tolist()) for split in transform.SPLITS]
    assert [len(p) for p in parts] == [180] * 3 and set.union(*parts) == set(range(540))
    assert transform.heldout_index("search").tolist() == sorted(parts[1])  # fixed, sorted
    scripts = ROOT / "environments" / "tasks" / "local-learning" / "scripts"
    seeds = [th.load_module(scripts / f"{name}.py", f"local_learning_{name}").SPLIT_SEEDS
             for name in ("produce", "eval")]
    assert seeds[0] == seeds[1] and len(set().union(*seeds[0].values())) == 9


@pytest.mark.slow
def test_task_search_scores_like_test(tmp_path):
    """search (its own 180 images and seeds 3-5) scored like test: SGR beats plain local learning
    by the task's threshold there too. ~2 min on one core."""
    task = th.prepared_task("local-learning")
    base, ref = (th.produce_and_score(task, th.make_workspace(task, tmp_path / f"ws{r}", reference=r),
                                      tmp_path / f"out{r}", split="search") for r in (False, True))
    assert 0 < ref < 0.8 * base < 20, (base, ref)
