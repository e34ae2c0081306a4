"""Entropy Enigma: flips under entropy minimisation predict the source model's accuracy
(CPU protocol: digits BN-MLP, 30 shifts, Tent-style EM, LOCO fits)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from methods.entropy_enigma import (
    EataLoss,
    all_shifts,
    apply_shift,
    builtin_source_model,
    configure_for_em,
    entropy,
    entropy_minimize,
    estimate_flips,
    estimate_flips_many,
    group_for_em,
    load_digits_split,
    rank_weights,
)
from methods.entropy_enigma.flips import AUTHORS_U_LIN, AUTHORS_U_QUAD, AUTHORS_W_QUAD
from methods.entropy_enigma.suite import builtin_shift_sets, flip_table, loco_summary
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def source():
    return builtin_source_model(0)


@pytest.fixture(scope="session")
def shift_sets():
    return builtin_shift_sets()


@pytest.fixture(scope="session")
def batch_rows(source, shift_sets):
    return flip_table(source, shift_sets, reference="batch_stats")


@pytest.fixture(scope="session")
def running_rows(source, shift_sets):
    return flip_table(source, shift_sets, reference="running_stats")


@pytest.mark.slow
def test_weighted_flips_beat_raw_confidence(batch_rows):
    mae = loco_summary(batch_rows)["mae"]
    assert mae["weighted_flips"] < mae["avg_conf_raw"] - 5, mae


@pytest.mark.slow
def test_flips_anticorrelate_with_accuracy(batch_rows, running_rows):
    assert loco_summary(batch_rows)["corr"]["acc_flips"] < -0.5
    assert loco_summary(running_rows)["corr"]["acc_flips"] < -0.75


@pytest.mark.slow
def test_flip_fractions_are_ordered(batch_rows, running_rows):
    for r in batch_rows + running_rows:
        assert 0 <= r["weighted_flips"] <= r["flips"] <= 1
        assert 0 <= r["true_acc"] <= 1


@pytest.mark.slow
def test_accuracies_span_a_wide_range(batch_rows):
    accs = [r["true_acc"] for r in batch_rows]
    assert min(accs) < 0.4 and max(accs) > 0.95


def test_no_steps_no_flips(source, shift_sets):
    stats = estimate_flips_many(source, [s.x for s in shift_sets[:3]], steps=0, reference="batch_stats")
    assert all(s.flips == 0.0 and s.weighted_flips == 0.0 for s in stats)


def test_same_seed_same_result_and_grouping_changes_nothing(source, shift_sets):
    xs = [shift_sets[i].x for i in (2, 13)]
    a = estimate_flips_many(source, xs, steps=40)
    b = estimate_flips_many(source, xs, steps=40)
    assert a == b
    alone = [estimate_flips(source, x, steps=40) for x in xs]
    for g, s in zip(a, alone):
        assert abs(g.flips - s.flips) <= 2 / 797 and abs(g.avg_conf - s.avg_conf) < 1e-5


def test_rank_weights():
    conf = np.array([0.2, 0.9, 0.5, 0.5, 0.1])
    w = rank_weights(conf)
    assert (w > 0).all() and (w <= 1).all()
    assert w[1] == 1.0 and w[2] == w[3]


def test_configuration_drops_running_stats_and_freezes_all_but_bn_affine(source):
    m = configure_for_em(source)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm1d):
            assert mod.running_mean is None and mod.running_var is None
    trainable = {n for n, p in m.named_parameters() if p.requires_grad}
    assert trainable == {"net.1.weight", "net.1.bias", "net.4.weight", "net.4.bias"}
    assert all(p.requires_grad for p in source.parameters())  # the source is untouched


def test_eata_filters_and_weights():
    e0 = 0.4 * math.log(10)
    logits = torch.zeros(3, 10)
    logits[1, 3] = 8.0  # confident
    logits[2, 5] = 6.0  # confident
    logits.requires_grad_(True)
    loss_fn = EataLoss(e0)
    loss, active = loss_fn(logits)
    loss.backward()
    assert active.all()
    assert torch.all(logits.grad[0] == 0)  # H = ln 10 >= E0: no gradient
    x2 = logits.detach().clone().requires_grad_(True)
    ent = entropy(x2)[1:]
    ((ent * torch.exp(e0 - ent).detach()).mean()).backward()
    assert torch.allclose(logits.grad, x2.grad, atol=1e-7)  # weight exp(E0 - H), detached
    # Redundancy: a sample aligned with p_bar (|cos| >= 0.05) is dropped, an orthogonal-ish one kept.
    p_bar = loss_fn.p_bar[0]
    probs = torch.stack([p_bar, torch.nn.functional.one_hot(torch.tensor(0), 10).float()])
    cos = torch.nn.functional.cosine_similarity(p_bar[None], probs, dim=1)
    keep = loss_fn.keep_mask(probs[None], torch.zeros(1, 2))[0]
    assert cos[0] >= 0.05 and not keep[0]
    assert keep[1] == (cos[1].abs() < 0.05)


def test_reset_restores_parameters_and_momentum(source, shift_sets):
    m = group_for_em(configure_for_em(source), 1)
    before = [p.detach().clone() for p in m.parameters() if p.requires_grad]
    opt_box: list = []
    xs = torch.as_tensor(shift_sets[4].x)[None]
    entropy_minimize(m, xs, steps=7, reset_every=7, eata_filter=True, optimizer_out=opt_box)
    after = [p.detach() for p in m.parameters() if p.requires_grad]
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    assert all(torch.count_nonzero(b) == 0 for b in opt_box[0].bufs)
    moved = group_for_em(configure_for_em(source), 1)
    entropy_minimize(moved, xs, steps=7, reset_every=1000)
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, [p for p in moved.parameters() if p.requires_grad]))


@pytest.mark.parametrize("clears", [False, True])
def test_reset_clears_p_bar_only_with_the_switch(source, shift_sets, clears):
    """The authors' RDumb forgets p_bar at each reset; labcoat's default keeps it (documented)."""
    m = group_for_em(configure_for_em(source), 1)
    loss_box: list = []
    xs = torch.as_tensor(shift_sets[4].x)[None]
    entropy_minimize(m, xs, steps=6, reset_every=6, eata_filter=True, reset_clears_p_bar=clears,
                     loss_out=loss_box)
    p_bar = loss_box[0].p_bar
    if clears:
        assert p_bar is None and loss_box[0].started is None
    else:
        assert p_bar is not None and bool(loss_box[0].started.all())  # samples were kept


def test_eata_reset_makes_the_next_batch_a_first_batch():
    logits = torch.zeros(1, 4, 10)
    logits[0, :, 3] = 8.0  # four identical confident samples: only the first batch keeps them all
    loss_fn = EataLoss(0.4 * math.log(10))
    assert bool(loss_fn(logits)[1].all())
    assert not bool(loss_fn(logits)[1].any())  # aligned with p_bar: all redundant
    loss_fn.reset()
    assert bool(loss_fn(logits)[1].all())


def test_authors_polynomials_transcribed():
    assert np.polyval(AUTHORS_W_QUAD, 0.0) == pytest.approx(75.66, abs=0.01)
    assert np.polyval(AUTHORS_U_LIN, 0.0) == pytest.approx(83.56, abs=0.01)
    assert np.polyval(AUTHORS_U_QUAD, 0.0) == pytest.approx(82.58, abs=0.01)


def test_shifts_are_deterministic_and_valid():
    x = load_digits_split().x_test[:50]
    assert len(all_shifts()) == 30
    for kind, sev in [("noise", 3), ("rot", 5), ("shift", 4), ("blur", 1)]:
        a, b = apply_shift(x, kind, sev), apply_shift(x, kind, sev)
        assert a.shape == x.shape and np.array_equal(a, b)
    with pytest.raises(ValueError, match="severity"):
        apply_shift(x, "noise", 0)


def _tool(args: dict, cwd: Path) -> subprocess.CompletedProcess:
    return tool_process("methods.entropy_enigma", args=args, cwd=cwd, bare=True)


@pytest.mark.slow  # a tool's whole run in a subprocess: the slow set (fast: its functions' tests)
def test_tool_end_to_end(tmp_path, source):
    torch.save(source.state_dict(), tmp_path / "src.pt")
    args = {"model": "methods.entropy_enigma.model:DigitsBNMLP", "checkpoint": "src.pt", "steps": 30,
            "shifts": [{"kind": k, "severity": s} for k in ("noise", "rot") for s in (1, 5)]}
    proc = _tool(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert len(rep["per_shift"]) == 4 and rep["mae"] is not None
    assert rep["config"]["e0"] == pytest.approx(0.4 * math.log(10))
    x = load_digits_split().x_test[:200]
    np.savez(tmp_path / "unlabelled.npz", X=x)
    proc = _tool({"checkpoint": "src.pt", "data": "unlabelled.npz", "steps": 10, "fit": "authors"}, tmp_path)
    rep = json.loads(proc.stdout)
    assert rep["per_shift"][0]["true_acc"] is None and rep["mae"] is None
    assert rep["per_shift"][0]["est_acc"] is not None and rep["warnings"]


def test_tool_bad_argument_names_the_field(tmp_path):
    proc = _tool({"steps": -1}, tmp_path)
    assert proc.returncode == 2 and "steps" in json.loads(proc.stdout)["error"]
    proc = _tool({"checkpoint": "nope.pt"}, tmp_path)
    assert proc.returncode == 2 and "checkpoint" in json.loads(proc.stdout)["error"]


# --- the label-free-accuracy task: held-out labels must not leak through sklearn's copy ------

TASK = ROOT / "environments" / "tasks" / "label-free-accuracy"


def _task_script(name: str):
    return th.load_module(TASK / "scripts" / f"{name}.py", f"lfa_{name}")


def test_bundled_digits_no_longer_recover_the_held_out_labels():
    """Nearest-neighbour lookup of the task's held-out images (all three splits' images) in
    sklearn's bundled digits: it finds the exact original rarely, and gives labels no better than
    the actor's own source images."""
    from sklearn.datasets import load_digits

    prepare = _task_script("prepare")
    d = load_digits()
    bundled, y = d.data / 16.0, d.target
    x = prepare.secret_jitter(bundled)
    perm = np.random.default_rng(0).permutation(len(x))
    tr, te = perm[:1000], perm[1000:]
    for query in (x[te], apply_shift(x[te], "noise", 2)):
        nn_bundled = ((query[:, None] - bundled[None]) ** 2).sum(-1).argmin(1)
        nn_source = ((query[:, None] - x[tr][None]) ** 2).sum(-1).argmin(1)
        assert (nn_bundled == te).mean() < 0.2  # 1.0 without the secret jitter
        acc_bundled = (y[nn_bundled] == y[te]).mean()
        acc_source = (y[tr][nn_source] == y[te]).mean()
        assert acc_bundled <= acc_source + 0.01, (acc_bundled, acc_source)


def test_task_gate_rejects_loading_bundled_digits(tmp_path):
    produce = _task_script("produce")  # the submission phase gates the source it is given
    (tmp_path / "features.py").write_text("from sklearn.datasets import load_digits\n")
    assert produce._forbidden_reference(tmp_path) == "features.py"
    out = tmp_path / "out"
    produce.produce(tmp_path, TASK / "scripts", out)
    ev = _task_script("eval")
    assert ev.score(str(out)) == ev.WORST


def test_task_carves_the_held_out_digits_into_three_disjoint_stratified_splits():
    """Issue #38: search, select and test share no image (a search must not see accuracies of
    test's images); each split keeps about the held-out pool's label mix, and the held-out
    pool's shuffled order (a set's row order must not follow the bundled digits' 0-9 cycle)."""
    prepare = _task_script("prepare")
    held_out = np.random.default_rng(0).permutation(1797)[1000:]
    labels = held_out % 10  # any labels: the carving only stratifies by them
    parts = prepare.carve(held_out, labels)
    assert {s: len(p) for s, p in parts.items()} == {"test": 399, "search": 199, "select": 199}
    assert sorted(np.concatenate(list(parts.values())).tolist()) == sorted(held_out.tolist())
    place = {int(i): k for k, i in enumerate(held_out)}
    for split, part in parts.items():
        assert np.all(np.diff([place[int(i)] for i in part]) > 0), split
        share = np.bincount(part % 10, minlength=10) / len(part)
        assert np.abs(share - np.bincount(labels, minlength=10) / len(labels)).max() < 0.01, split
    again = prepare.carve(held_out, labels)
    assert all(np.array_equal(parts[s], again[s]) for s in parts)


@pytest.mark.slow
def test_task_search_and_select_score_like_test(tmp_path):
    """search and select are the 30 sets of their own held-out digits (199 each, none of test's
    399), scored like test: the reference's [d, W] beats the baseline's [W, W^2] on both (search
    8.5 vs 16.3, select 11.1 vs 16.7; test 11.1 vs 17.4 on this machine). ~15 s a scoring."""
    task = th.prepared_task("label-free-accuracy")
    for split in ("search", "select"):
        base, ref = (th.produce_and_score(task, th.make_workspace(task, tmp_path / f"{split}{r}", reference=r),
                                          tmp_path / f"out-{split}{r}", split=split) for r in (False, True))
        assert 3.0 < ref < 0.95 * base < 20.0, (split, base, ref)


def test_task_loco_mae_of_a_perfect_feature_is_zero():
    ev = _task_script("eval")
    accs = np.linspace(0.2, 0.9, 12)
    kinds = [k for k in "abc" for _ in range(4)]
    assert ev.loco_mae(accs[:, None] * 2 + 1, accs, kinds) == pytest.approx(0.0, abs=1e-9)


def test_flip_estimates_take_exactly_the_em_settings():
    """``estimate_flips_many`` passes EM's settings on to ``entropy_minimize``: a misspelt one is
    refused before any work, not silently ignored."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    with pytest.raises(TypeError, match="stepz"):
        estimate_flips_many(model, [], stepz=3)
    assert estimate_flips_many(model, [], steps=3, seed=1) == []


def _handwritten_bn(bn, x: torch.Tensor) -> torch.Tensor:
    """The previous GroupedBatchNorm forward (explicit mean and biased variance per group)."""
    xs = x.reshape(bn.groups, x.shape[0] // bn.groups, *x.shape[1:])
    dims = [1, *range(3, xs.dim())]
    mean = xs.mean(dim=dims, keepdim=True)
    var = xs.var(dim=dims, unbiased=False, keepdim=True)
    shape = [bn.groups, 1, -1] + [1] * (xs.dim() - 3)
    out = (xs - mean) / torch.sqrt(var + bn.eps) * bn.weight.view(shape) + bn.bias.view(shape)
    return out.reshape(x.shape)


@pytest.mark.parametrize("shape", [(3 * 64, 128), (2 * 16, 4, 5, 5)])
def test_grouped_bn_on_torch_kernel_matches_the_handwritten_path(shape):
    """The fast path (torch's batch_norm, groups side by side as channels) gives the previous
    hand-written path's outputs and gradients within 1e-5 relative (float32 round-off: they
    are not bit-identical), and each group exactly what nn.BatchNorm gives it alone."""
    from methods.entropy_enigma.adapt import GroupedBatchNorm

    groups = 3 if len(shape) == 2 else 2
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(shape[1]) if len(shape) == 2 else torch.nn.BatchNorm2d(shape[1])
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5), bn.bias.uniform_(-0.5, 0.5)
    gbn = GroupedBatchNorm(bn, groups)
    with torch.no_grad():
        gbn.weight.add_(torch.randn_like(gbn.weight) * 0.1)
    x = (torch.randn(shape) * 3 + 1).requires_grad_(True)
    g_out = torch.randn(shape)

    def run(forward):
        gbn.zero_grad(), x.grad.zero_() if x.grad is not None else None
        out = forward(x)
        (out * g_out).sum().backward()
        return out.detach(), x.grad.clone(), gbn.weight.grad.clone(), gbn.bias.grad.clone()

    fast, slow = run(gbn), run(lambda v: _handwritten_bn(gbn, v))
    for a, b in zip(fast, slow):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5), float((a - b).abs().max())
    per = x.shape[0] // groups
    for r in range(groups):  # each group: exactly torch's BN in batch-statistics mode alone
        alone = torch.nn.functional.batch_norm(x.detach()[r * per:(r + 1) * per], None, None,
                                               gbn.weight[r].detach(), gbn.bias[r].detach(), True)
        assert torch.equal(fast[0][r * per:(r + 1) * per], alone)


def test_fast_path_flips_equal_the_handwritten_path(source, shift_sets, monkeypatch):
    """End to end on two shifted sets (Tent, 40 steps): the same flip statistics as the previous
    hand-written batch norm, and grouped sets exactly what each gives alone."""
    from methods.entropy_enigma.adapt import GroupedBatchNorm

    xs = [shift_sets[i].x for i in (2, 13)]
    fast = estimate_flips_many(source, xs, steps=40)
    assert fast == [estimate_flips(source, x, steps=40) for x in xs]  # bit-identical now
    monkeypatch.setattr(GroupedBatchNorm, "forward", _handwritten_bn)
    slow = estimate_flips_many(source, xs, steps=40)
    for f, s in zip(fast, slow):
        assert f.n_images == s.n_images and f.flips == s.flips
        assert f.weighted_flips == pytest.approx(s.weighted_flips, abs=1e-6)
        assert f.avg_conf == pytest.approx(s.avg_conf, abs=1e-6)
