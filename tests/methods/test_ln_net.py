"""LN-Net: the spec's "Tests that must hold" (geometry, construction, trained capacity, LSSR)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from methods.ln_net import (
    construct,
    forward_construction,
    group_layer_norm,
    layer_norm,
    lssr,
)
from methods.ln_net.construction import E, ln_exact
from methods.ln_net.run import ln_capacity, ln_construct
from methods.ln_net.tools import LNCapacityArgs, LNConstructArgs
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process

pytestmark = pytest.mark.usefixtures("one_thread")


def _circle(c):
    """u ↦ (u + c)/‖u + c‖ for unit vectors u (n, 2)."""
    return lambda u: (u + c) / np.linalg.norm(u + c, axis=-1, keepdims=True)


# ---------------------------------------------------------------------------- 1. LN geometry


def test_ln_maps_r3_onto_the_circle():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(1000, 3)) * rng.uniform(0.1, 10, size=(1000, 1))
    h = ln_exact(z)
    assert np.abs(h.mean(axis=1)).max() < 1e-12
    assert np.abs((h ** 2).sum(axis=1) - 3).max() < 1e-12
    torch_h = layer_norm(torch.as_tensor(z), eps=0.0).numpy()
    assert np.abs(torch_h - h).max() < 1e-12
    u = rng.normal(size=(1000, 2))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    c = rng.normal(size=2)
    lhs = ln_exact((u + c) @ E.T)
    rhs = np.sqrt(3) * (u + c) @ E.T / np.linalg.norm(u + c, axis=1, keepdims=True)
    assert np.abs(lhs - rhs).max() < 1e-12


# ----------------------------------------------------------------------------- 2. merge algebra


def test_merge_algebra():
    rng = np.random.default_rng(1)
    ui, uj = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 2)))
    for t in (1.5, -0.5):
        f = _circle(-(ui + t * (uj - ui)))
        assert np.abs(f(ui[None]) - f(uj[None])).max() < 1e-12
    f = _circle(-(ui + 0.5 * (uj - ui)))
    assert np.abs(f(ui[None]) + f(uj[None])).max() < 1e-12  # antipodal
    theta = np.sort(rng.uniform(-np.pi, np.pi, 1000))
    u = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    c = 0.97 * np.array([np.cos(0.3), np.sin(0.3)])
    v = _circle(c)(u)
    angles = np.sort(np.arctan2(v[:, 1], v[:, 0]))
    assert np.diff(angles).min() > 0  # |c| < 1: still 1000 distinct points


# ------------------------------------------------------------------------------ 3. construction


@pytest.mark.parametrize("m", [8, 16, 24, 32])
def test_width3_construction_fits_random_labels(tmp_path, m):
    for seed in range(3):
        r = ln_construct(LNConstructArgs(n_points=m, seed=seed, out=str(tmp_path / "w.npz")))
        assert r["train_acc"] == 1.0
        assert r["n_layers"] == 2 * m - 4
        assert r["min_abs_logit"] > 0.01
        with np.load(tmp_path / "w.npz") as f:
            hidden = [f[k] for k in f.files if k.startswith("W") and k != "W0"]
            assert len(hidden) == 2 * m - 5 and all(W.shape == (3, 3) for W in hidden)
            assert f["W0"].shape == (3, 8) and f["w_out"].shape == (3,)


def test_construction_on_given_data():
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(12, 5)), np.array([0, 1] * 6)
    net = construct(X, y, seed=3)
    assert np.all((forward_construction(net, X) > 0) == (y == 1))


# -------------------------------------------------------------------------- 4. trained capacity


@pytest.fixture(scope="module")
def capacity_runs():
    runs = {}
    for s in range(3):
        common = dict(n_points=256, d=8, width=16, depth=6, steps=800, data_seed=s, seed=s)
        runs[("ln", s)] = ln_capacity(LNCapacityArgs(groups=1, compare_linear=True, **common))
        runs[("g4", s)] = ln_capacity(LNCapacityArgs(groups=4, compare_linear=False, **common))
    return runs


@pytest.mark.slow
def test_grouped_ln_fits_random_labels(capacity_runs):
    assert all(capacity_runs[("g4", s)]["train_acc"] >= 0.95 for s in range(3))
    assert capacity_runs[("g4", 0)]["n_params"] == 1538


@pytest.mark.slow
def test_ln_beats_linear_which_cannot_fit(capacity_runs):
    ln = np.mean([capacity_runs[("ln", s)]["train_acc"] for s in range(3)])
    linear = [capacity_runs[("ln", s)]["linear_acc"] for s in range(3)]
    assert ln >= np.mean(linear) + 0.1
    assert all(acc <= 0.7 for acc in linear)


# ------------------------------------------------------------------------------------ 5. LSSR


def test_lssr_two_ray_demo():
    rng = np.random.default_rng(0)
    n = 200
    s = rng.uniform(0.2, 5, size=n)
    y = np.arange(n) % 2
    rays = np.where(y[:, None] == 0, [1.0, 0.2, 0.0], [0.2, 1.0, 0.0])
    X = s[:, None] * rays + 0.01 * rng.normal(size=(n, 3))
    A = rng.normal(size=(3, 3))
    assert abs(lssr(X @ A.T, y) - lssr(X, y)) < 1e-6
    assert lssr(layer_norm(torch.as_tensor(X), eps=0.0).numpy(), y) < 0.01 * lssr(X, y)


def test_linear_net_cannot_lower_lssr():
    r = ln_capacity(LNCapacityArgs(groups=0, steps=200, compare_linear=False))
    assert r["lssr_last_hidden"] >= r["lssr_input"] - 1e-6


# -------------------------------------------------------------------------------- 6. grouping


def test_group_ln():
    z = torch.randn(50, 16, dtype=torch.float64)
    assert torch.equal(group_layer_norm(z, 1), layer_norm(z))
    out = group_layer_norm(z, 4, eps=1e-5).reshape(50, 4, 4)
    assert out.mean(dim=-1).abs().max() < 1e-12
    var = out.var(dim=-1, unbiased=False)
    assert (var - 1).abs().max() < 1e-3  # 1 up to ε relative to the group's variance


def test_small_groups_warn():
    r = ln_capacity(LNCapacityArgs(n_points=32, groups=8, steps=5, compare_linear=False))
    assert r["group_size"] == 2 and any("group size 2" in w for w in r["warnings"])


# ---------------------------------------------------------------------- 7. determinism, tool


def test_same_arguments_same_report(tmp_path):
    args = dict(n_points=64, steps=50, groups=4)
    assert ln_capacity(LNCapacityArgs(**args)) == ln_capacity(LNCapacityArgs(**args))
    c = dict(n_points=10, out=str(tmp_path / "c.npz"))
    assert ln_construct(LNConstructArgs(**c)) == ln_construct(LNConstructArgs(**c))


def _tool(argv: list[str], args: dict, cwd: Path) -> subprocess.CompletedProcess:
    return tool_process("methods.ln_net", *argv, args=args, cwd=cwd)


@pytest.mark.slow  # a tool's whole run in a subprocess: the slow set (fast: its functions' tests)
def test_tools_end_to_end(tmp_path):
    res = _tool(["ln_construct"], {"n_points": 12}, tmp_path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["train_acc"] == 1.0 and (tmp_path / report["weights_npz"]).exists()
    res = _tool(["ln_capacity"], {"n_points": 32, "steps": 20}, tmp_path)
    assert res.returncode == 0 and "linear_acc" in json.loads(res.stdout)


def test_tool_errors_name_their_field(tmp_path):
    np.savez(tmp_path / "multi.npz", X=np.zeros((5, 2)), y=np.array([0, 1, 2, 0, 1]))
    cases = [(["ln_capacity"], {"groups": 3}, "groups"), (["ln_construct"], {"n_points": 65}, "n_points"),
             (["ln_construct"], {"data": "multi.npz"}, "binary")]
    for argv, args, word in cases:
        res = _tool(argv, args, tmp_path)
        assert res.returncode == 2 and word in json.loads(res.stdout)["error"], res.stdout


# ------------------------------------------------------------------------------- the task


@pytest.mark.slow
def test_task_reference_beats_baseline(tmp_path):
    _, _, ref = th.assert_check_task("ln-net-capacity")
    assert ref == 1.0


def test_task_budget_gates(tmp_path):
    path = ROOT / "environments" / "tasks" / "ln-net-capacity" / "env" / "lnlib.py"
    lnlib = th.load_module(path, "lnlib_task")
    base = lnlib.load_spec(path.parent / "net.json")
    assert sum(p.numel() for p in lnlib.build(base).parameters()) == 1538
    wide = dict(base, layers=[{"width": 40, "norm": {"groups": 1}}] * 2)
    with pytest.raises(lnlib.NetSpecError, match="parameters"):
        lnlib.build(wide)
    (tmp_path / "net.json").write_text(json.dumps(dict(base, steps=801)))
    with pytest.raises(lnlib.NetSpecError, match="steps"):
        lnlib.load_spec(tmp_path / "net.json")


def test_task_splits_are_their_own_seeds(tmp_path):
    """search, select and test are disjoint dataset seeds (test's unchanged); each split's
    scorer gates a net over budget before it trains anything."""
    task = ROOT / "environments" / "tasks" / "ln-net-capacity"
    ev = th.load_module(task / "scripts" / "eval.py", "ln_eval")
    seeds = {s: set(ev.split_members(s)) for s in ("search", "select", "test")}
    assert seeds["test"] == {52_331, 52_337, 52_361, 52_363, 52_369}
    assert not (seeds["search"] & seeds["select"] or (seeds["search"] | seeds["select"]) & seeds["test"])
    shutil.copy(task / "env" / "lnlib.py", tmp_path)
    base = json.loads((task / "env" / "net.json").read_text())
    (tmp_path / "net.json").write_text(json.dumps(dict(base, steps=801)))
    for score in (ev.get_score, ev.get_search_score, ev.get_select_score):
        assert score(str(tmp_path)) == ev.WORST


@pytest.mark.slow
def test_task_reference_fits_every_split(tmp_path):
    """The grouped-LN reference memorises the search and select datasets too, as it does test's."""
    task = ROOT / "environments" / "tasks" / "ln-net-capacity"
    ev = th.load_module(task / "scripts" / "eval.py", "ln_eval")
    shutil.copy(task / "env" / "lnlib.py", tmp_path)
    shutil.copy(task / "reference" / "net.json", tmp_path)
    assert ev.get_search_score(str(tmp_path)) == ev.get_select_score(str(tmp_path)) == 1.0
