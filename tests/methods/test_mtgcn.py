"""MTGCN: the spec's claims at test size (CSBM n = 600, 100 epochs, seed 0), plus invariants.

Measured at this size (test accuracy %, one graph each, hidden 64, a = 0.9; the spec's values
at n = 1000 / 150 epochs in brackets):

    model            h = 0.8        h = 0.3
    GCN-16           25.5 (26.9)    21.4 (23.7)
    GCN-2              -            64.1 (59.5)
    MTGCN-16         100.0 (99.4)   87.7 (91.0)
    single-track-16  99.5 (99.4)    87.3 (89.7)

MTGCN-16 at h = 0.3 sits 2.7 points above the spec's 85% bound, less than the 3 points of
headroom the spec asks for, so that bound is loosened to 84% here (as the spec allows).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from methods.mtgcn.fit import FitConfig, affiliation_loss, fit
from methods.mtgcn.graph import csbm, edge_homophily, normalized_adjacency
from methods.mtgcn.models import MTGCN, TrackBuilder, propagate_tracks, sharpness
from tests import task_checks as th
from tests.methods.tool_run import tool_process

N, EPOCHS = 600, 100


@pytest.fixture(scope="session")
def graphs():
    torch.set_num_threads(1)
    return {h: csbm(n=N, homophily=h, seed=0) for h in (0.8, 0.3)}


@pytest.fixture(scope="session")
def acc(graphs):
    """Test accuracy of every model the claims compare, trained once per session."""
    runs = {
        ("gcn16", 0.8): FitConfig(model="gcn", layers=16),
        ("gcn16", 0.3): FitConfig(model="gcn", layers=16),
        ("gcn2", 0.3): FitConfig(model="gcn", layers=2),
        ("mt16", 0.8): FitConfig(model="mtgcn", layers=16),
        ("mt16", 0.3): FitConfig(model="mtgcn", layers=16),
        ("st16", 0.8): FitConfig(model="single_track", layers=16),
        ("st16", 0.3): FitConfig(model="single_track", layers=16),
    }
    out = {}
    for key, cfg in runs.items():
        cfg.epochs, cfg.seed = EPOCHS, 0
        out[key] = fit(graphs[key[1]], cfg).test_acc
    return out


@pytest.mark.slow
@pytest.mark.parametrize("h", [0.8, 0.3])
def test_deep_gcn_oversmooths(acc, h):
    assert acc[("gcn16", h)] < 0.35


@pytest.mark.slow
def test_mtgcn_holds_at_depth(acc):
    assert acc[("mt16", 0.8)] > 0.90
    assert acc[("mt16", 0.3)] > 0.84  # spec: 0.85; loosened for headroom (see the docstring)


@pytest.mark.slow
def test_mtgcn_handles_heterophily(acc):
    assert acc[("mt16", 0.3)] - acc[("gcn2", 0.3)] >= 0.20


@pytest.mark.slow
@pytest.mark.parametrize("h", [0.8, 0.3])
def test_tracks_not_worse_than_single_track(acc, h):
    assert acc[("mt16", h)] >= acc[("st16", h)] - 0.02


def test_affiliation_is_a_distribution_and_sharpness_in_range():
    torch.manual_seed(0)
    builder = TrackBuilder(16, 8, heads=2)
    alpha = builder(torch.randn(50, 16), torch.randn(4, 16) * 5)
    assert (alpha >= 0).all()
    assert torch.allclose(alpha.sum(1), torch.ones(50), atol=1e-6)
    s = sharpness(alpha)
    assert (s >= 1 / 4 - 1e-6).all() and (s <= 1 + 1e-6).all()
    extremes = sharpness(torch.tensor([[1.0, 0, 0, 0], [0.25] * 4]))
    assert torch.allclose(extremes, torch.tensor([1.0, 0.25]), atol=1e-6)


def test_normalised_adjacency_is_symmetric_with_self_loops_and_bounded_spectrum(graphs):
    g = graphs[0.3]
    dense = normalized_adjacency(g.edges, g.n).to_dense()
    assert torch.allclose(dense, dense.T)
    assert (dense.diagonal() > 0).all()
    eig = torch.linalg.eigvalsh(dense.double())
    assert eig.max() <= 1 + 1e-6 and eig.min() > -1  # float32 entries
    assert abs(eig.max().item() - 1.0) < 1e-6


def test_tracks_do_not_interact(graphs):
    g = graphs[0.3]
    adj = normalized_adjacency(g.edges, g.n)
    torch.manual_seed(0)
    t0 = torch.randn(g.n, 4, 8)
    x0 = torch.randn(g.n, 8)
    base = propagate_tracks(t0, x0, adj, 6, 0.9, 0.0, training=False)[-1]
    bumped = t0.clone()
    bumped[:, 2] += torch.randn(g.n, 8)
    moved = propagate_tracks(bumped, x0, adj, 6, 0.9, 0.0, training=False)[-1]
    for c in (0, 1, 3):
        assert torch.equal(base[:, c], moved[:, c])
    assert not torch.allclose(base[:, 2], moved[:, 2])


def test_track_inputs_follow_affiliation_and_sharpness():
    torch.manual_seed(0)
    net = MTGCN(5, 8, 3, layers=2)
    x = torch.randn(7, 5)
    alpha = torch.softmax(torch.randn(7, 3), 1)
    t0 = net.track_inputs(x, alpha)
    expected = alpha[:, :, None] * sharpness(alpha)[:, None, None] * net.w_v(x)[:, None, :]
    assert torch.allclose(t0, expected)


# --- the authors' variants (documented departures, one switch each) -------------------------


def test_double_softmax_affiliation_loss_is_the_authors_formula():
    alpha = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    target = torch.tensor([0, 1])
    theirs = affiliation_loss(alpha, target, "double_softmax")
    by_hand = -(alpha[[0, 1], target] - torch.logsumexp(alpha, dim=1)).mean()
    assert torch.allclose(theirs, by_hand)
    ours = affiliation_loss(alpha, target, "ce")
    assert torch.allclose(ours, -torch.log(torch.tensor([0.7, 0.1])).mean())
    assert not torch.allclose(theirs, ours)
    with pytest.raises(ValueError, match="affiliation_loss"):
        affiliation_loss(alpha, target, "softmax")


def test_per_head_tracks_feed_each_head_its_own_alpha():
    torch.manual_seed(0)
    net = MTGCN(5, 8, 3, layers=2, heads=2)
    x = torch.randn(7, 5)
    heads = torch.softmax(torch.randn(2, 7, 3), 2)
    t0 = net.track_inputs(x, heads)
    assert t0.shape == (7, 3, 16)
    v = net.w_v(x).view(7, 2, 8)
    for h in range(2):
        expected = heads[h][:, :, None] * sharpness(heads[h])[:, None, None] * v[:, None, h]
        assert torch.allclose(t0[:, :, 8 * h:8 * (h + 1)], expected)
    assert net.merge.in_features == 2 and net.merge.out_features == 1


def test_per_head_tracks_merge_by_the_learned_layer(graphs):
    """With identical heads, merge weights (1, 0) read out head 0 alone: the single-set model
    with head 0's maps; weights (0, 1) give head 1's (different maps, different output)."""
    g = graphs[0.3]
    adj = normalized_adjacency(g.edges, g.n)
    x = torch.from_numpy(g.X)
    alpha = torch.softmax(torch.randn(g.n, 4, generator=torch.Generator().manual_seed(1)), 1)
    torch.manual_seed(0)
    two = MTGCN(x.shape[1], 8, 4, layers=3, heads=2).eval()
    one = MTGCN(x.shape[1], 8, 4, layers=3).eval()
    with torch.no_grad():
        for name in ("w_in", "w_v"):
            getattr(one, name).weight.copy_(getattr(two, name).weight[:8])
            getattr(one, name).bias.copy_(getattr(two, name).bias[:8])
        one.out.load_state_dict(two.out.state_dict())
        two.merge.weight.copy_(torch.tensor([[1.0, 0.0]]))
        two.merge.bias.zero_()
        merged = two(x, adj, torch.stack([alpha, alpha]))[0]
        assert torch.allclose(merged, one(x, adj, alpha)[0], atol=1e-5)
        assert torch.allclose(merged, two(x, adj, alpha)[0])  # an (n, C) alpha is shared by the heads
        two.merge.weight.copy_(torch.tensor([[0.0, 1.0]]))
        assert not torch.allclose(two(x, adj, alpha)[0], merged, atol=1e-3)


def test_authors_switches_train_end_to_end():
    torch.set_num_threads(1)
    g = csbm(n=120, homophily=0.3, seed=0)
    cfg = FitConfig(model="mtgcn", layers=2, epochs=5, easy_per_class=5, head_tracks="per_head",
                    affiliation_loss="double_softmax")
    r = fit(g, cfg)
    assert r.alpha.shape == (g.n, 4)
    assert np.allclose(r.alpha.sum(1), 1.0, atol=1e-5)
    assert r.predictions.shape == (g.n,) and r.val_acc is not None  # n = 120: 80 train, 40 val, no test


@pytest.mark.parametrize("affiliation, expected, tol", [("oracle", 1.0, 0.0), ("noisy:0.2", 0.8, 0.05)])
def test_fixed_affiliations(graphs, affiliation, expected, tol):
    cfg = FitConfig(model="mtgcn", layers=2, epochs=5, affiliation=affiliation)
    r = fit(graphs[0.3], cfg)
    assert abs(r.affiliation_acc - expected) <= tol + 1e-12


@pytest.mark.parametrize("h", [0.8, 0.3])
def test_csbm_hits_its_homophily_and_degree(graphs, h):
    g = graphs[h]
    assert abs(edge_homophily(g.edges, g.y) - h) <= 0.03
    assert abs(2 * g.edges.shape[1] / g.n - 10) <= 1.0
    assert g.train.sum() == 80 and g.val.sum() == 300 and g.test.sum() == N - 380
    assert not (g.train & g.val).any() and not (g.val & g.test).any()


def _tool(args: dict, cwd: Path) -> subprocess.CompletedProcess:
    return tool_process("methods.mtgcn", args=args, cwd=cwd)


@pytest.mark.slow  # a whole tool run in a subprocess (trains); the tool's pieces are tested fast
def test_tool_end_to_end_on_a_graph_file_without_test_labels(tmp_path):
    g = csbm(n=200, homophily=0.3, seed=3, n_val=60)
    g.y = np.where(g.test, -1, g.y)
    g.save(tmp_path / "g.npz")
    proc = _tool({"graph_npz": "g.npz", "layers": 4, "epochs": 20}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["test_acc"] is None and report["affiliation_acc"] is None
    assert 0.0 <= report["val_acc"] <= 1.0
    assert len(report["per_layer_group_distance_ratio"]) == 4
    assert report["n_easy"] > 0


def test_bad_argument_names_the_field(tmp_path):
    proc = _tool({"affiliation": "noisy:2"}, tmp_path)
    assert proc.returncode == 2
    assert "affiliation" in json.loads(proc.stdout)["error"]
    proc = _tool({"graph_npz": "missing.npz"}, tmp_path)
    assert proc.returncode == 2
    assert "graph_npz" in json.loads(proc.stdout)["error"]


# --- the task: mtgcn-heterophily -------------------------------------------------------------

NAME = "mtgcn-heterophily"


def test_task_workspace_graphs_hide_the_test_labels(tmp_path):
    spec = th.prepared_task(NAME)
    ev = th.load_eval(spec)
    for i in range(ev.N_ALL):
        with np.load(spec.env_dir / "data" / f"graph{i}.npz") as f:
            assert (f["y"][f["test"]] == -1).all()
            assert (f["y"][f["train"] | f["val"]] >= 0).all()
            assert abs(edge_homophily(f["edges"], ev.graph(i).y) - ev.CSBM["homophily"]) < 0.03


def test_task_splits_are_their_own_graphs(tmp_path):
    """Each split scores the submissions of its own graphs only: one class everywhere scores
    about a quarter on every split, and a missing file of a split's graph scores that split 0."""
    spec = th.prepared_task(NAME)
    ev = th.load_eval(spec)
    members = {s: ev.split_members(s) for s in ("search", "select", "test")}
    assert sorted(sum(members.values(), [])) == list(range(ev.N_ALL))
    for i in range(ev.N_ALL):
        with np.load(spec.env_dir / "data" / f"graph{i}.npz") as f:
            nodes = np.flatnonzero(f["test"])
        (tmp_path / f"submission_{i}.csv").write_text(
            "node,class\n" + "".join(f"{v},0\n" for v in nodes))
    for score in (ev.get_score, ev.get_search_score, ev.get_select_score):
        assert 0.15 < score(str(tmp_path)) < 0.35
    (tmp_path / f"submission_{members['search'][0]}.csv").unlink()
    assert ev.get_search_score(str(tmp_path)) == 0.0
    assert ev.get_score(str(tmp_path)) > 0.15 and ev.get_select_score(str(tmp_path)) > 0.15
