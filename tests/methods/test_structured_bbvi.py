"""Structured BBVI: exact KL, gradients, parameter counts and the structured/full-rank gap."""

from __future__ import annotations

import json
import subprocess

import pytest
import torch
from pydantic import ValidationError

from methods.structured_bbvi import (
    FAMILIES,
    Family,
    Structured,
    fit,
    make_optimizer,
    make_problem,
    n_scale_params,
    structured_mask,
)
from methods.structured_bbvi.run import StepSize, run_one, run_tool
from methods.structured_bbvi.tools import BbviArgs
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def problem32():
    return make_problem(32, problem_seed=0)


# --- exact KL -------------------------------------------------------------------------------


def test_posterior_cholesky_is_structured_and_has_zero_kl(problem32):
    p = problem32
    chol = torch.linalg.cholesky(torch.linalg.inv(p.Lam))
    assert p.kl(p.mu, chol) < 1e-8
    assert chol[~structured_mask(p.dims)].abs().max() < 1e-10


def test_meanfield_floor(problem32):
    p = problem32
    diag = torch.diag(torch.diagonal(p.Lam) ** -0.5)
    assert p.kl(p.mu, diag) == pytest.approx(p.kl_floor_meanfield, abs=1e-8)
    gen = torch.Generator().manual_seed(0)
    for _ in range(100):
        m = p.mu + torch.randn(p.d, generator=gen, dtype=F64)
        scale = torch.exp(torch.randn(p.d, generator=gen, dtype=F64) - 2.0)
        assert p.kl(m, torch.diag(scale)) >= p.kl_floor_meanfield


def test_elbo_is_log_z_minus_kl(problem32):
    p = problem32
    gen = torch.Generator().manual_seed(1)
    m = p.mu + 0.2 * torch.randn(p.d, generator=gen, dtype=F64)
    C = torch.tril(0.05 * torch.randn(p.d, p.d, generator=gen, dtype=F64)) + 0.3 * torch.eye(p.d, dtype=F64)
    assert p.elbo_exact(m, C) == pytest.approx(p.log_Z - p.kl(m, C), abs=1e-8)
    # the Monte Carlo ELBO the optimiser sees agrees within its standard error
    u = torch.randn(20000, p.d, generator=gen, dtype=F64)
    logp = p.log_joint(m + u @ C.T)
    entropy = torch.linalg.slogdet(C)[1] + 0.5 * p.d * (1 + torch.log(torch.tensor(2 * torch.pi, dtype=F64)))
    mc = float(logp.mean() + entropy)
    assert abs(mc - (p.log_Z - p.kl(m, C))) < 4 * float(logp.std()) / 20000**0.5


def test_reparameterised_gradient_matches_the_exact_one(problem32):
    p = problem32
    gen = torch.Generator().manual_seed(2)
    q = Family.create("structured", p.dims)
    N = p.dims.N
    with torch.no_grad():
        q.params["m"].copy_(p.mu + 0.3 * torch.randn(p.d, generator=gen, dtype=F64))
        q.params["LG"].copy_(torch.tril(0.1 * torch.randn(2, 2, generator=gen, dtype=F64)) + 0.5 * torch.eye(2))
        q.params["B"].copy_(0.1 * torch.randn(N, 2, 2, generator=gen, dtype=F64))
        q.params["L"].copy_(torch.tril(0.1 * torch.randn(N, 2, 2, generator=gen, dtype=F64)) + 0.5 * torch.eye(2))
    u = torch.randn(20000, p.d, generator=gen, dtype=F64)
    grad = -q.neg_elbo_grad(p, u)  # the pathwise estimate of the ELBO's gradient
    m, C = q.dense()
    want_m = -p.Lam @ (m - p.mu)
    want_C = -(structured_mask(p.dims) * (p.Lam @ C) - torch.diag(1.0 / torch.diagonal(C)))
    got_m, got_C = Structured(p.dims, grad).dense()
    assert (got_m - want_m).norm() / want_m.norm() < 0.05
    assert (got_C - want_C).norm() / want_C.norm() < 0.05


@pytest.mark.parametrize("name", FAMILIES)
def test_written_out_gradient_is_autograds(name):
    p = make_problem(6, problem_seed=1)
    q = Family.create(name, p.dims)
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        q.flat.copy_(torch.randn(q.flat.shape, generator=gen, dtype=F64))
    q.flat.requires_grad_(True)
    u = torch.randn(7, p.d, generator=gen, dtype=F64)
    (-(p.log_joint(q.sample(u)).mean() + q.log_abs_det())).backward()
    assert torch.allclose(q.neg_elbo_grad(p, u), q.flat.grad, rtol=1e-10, atol=1e-10)


# --- families -------------------------------------------------------------------------------


def test_parameter_counts_at_n32(problem32):
    counts = [n_scale_params(f, problem32.dims) for f in FAMILIES]
    assert counts == [66, 227, 2211]
    assert int(structured_mask(problem32.dims).sum()) == 227


@pytest.mark.parametrize("name", FAMILIES)
def test_sampling_is_m_plus_C_u(problem32, name):
    q = Family.create(name, problem32.dims)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        q.flat.copy_(torch.randn(q.flat.shape, generator=gen, dtype=F64))
    m, C = q.dense()
    assert torch.equal(C, torch.tril(C))
    if name == "structured":
        assert C[~structured_mask(problem32.dims)].abs().max() == 0
    u = torch.randn(5, problem32.d, generator=gen, dtype=F64)
    assert torch.allclose(q.sample(u), m + u @ C.T, atol=1e-12)
    assert float(q.log_abs_det()) == pytest.approx(float(torch.linalg.slogdet(C)[1]), abs=1e-9)


# --- the family gap (N = 32, seed 0, Adam, 8 samples) ----------------------------------------


def _best(problem, family, log10_lrs, cap):
    """Fewest iterations to KL <= 0.5 over the step sizes; a miss counts as the cap.

    Every run after the first is capped at the best so far: it cannot change the minimum."""
    args = BbviArgs(n_groups=32)
    best = cap
    for x in log10_lrs:
        result = run_one(problem, family, StepSize(x, 10.0**x), args, iters=best)
        if result.iters_to_eps is not None:
            best = min(best, result.iters_to_eps)
    return best


@pytest.mark.slow  # ~6 s of fits; test_gap_grows_with_n (slow) and the mean-field tests hold the rest
def test_full_rank_needs_three_times_the_iterations(problem32):
    structured = _best(problem32, "structured", [-2.25, -2.5, -2.0], cap=6000)
    assert structured < 6000  # reaches KL <= 0.5 (spec: 900 at 10^-2.25)
    # Full-rank only has to be shown slower than 3x structured: cap its runs there.
    full = _best(problem32, "full_rank", [-3.0, -3.25, -2.75], cap=min(6000, 3 * structured))
    assert full >= 3 * structured  # spec: 4400 vs 900 (ratio 4.9)


def test_meanfield_never_goes_below_its_floor(problem32):
    q = Family.create("meanfield", problem32.dims)
    opt = make_optimizer("adam", q.leaves(), 1e-2)
    result = fit(problem32, q, opt, n_samples=8, iters=1000, target=-1.0)  # run all 1000
    assert problem32.kl_floor_meanfield > 1.0
    assert len(result.curve) == 10
    assert all(kl >= problem32.kl_floor_meanfield - 1e-9 for _, kl in result.curve)


@pytest.mark.slow
def test_gap_grows_with_n():
    ratios = {}
    for N in (16, 32):
        report = run_tool(BbviArgs(n_groups=N, families=["structured", "full_rank"], steps=8000))
        ratios[N] = report["ratio_full_to_structured"]
    assert ratios[32] > ratios[16]  # spec: 4.9 vs 3.3


# --- the tool end to end --------------------------------------------------------------------


def _tool(args: dict) -> subprocess.CompletedProcess:
    return tool_process("methods.structured_bbvi", "bbvi_hierarchical", args=args)


@pytest.mark.slow  # a tool's whole run in a subprocess: the slow set (fast: its functions' tests)
def test_tool_runs_end_to_end():
    proc = _tool({"n_groups": 4, "log10_lr": [-2.0, -1.5], "steps": 300})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["problem"]["d"] == 10
    for name in FAMILIES:
        block = report["families"][name]
        assert len(block["per_lr"]) == 2
        assert block["kl_curve"][-1]["kl"] == block["final_kl"]
        if block["iters_to_eps"] is not None:
            assert block["grad_evals_to_eps"] == 8 * block["iters_to_eps"]
            assert block["final_kl"] <= block["kl_floor"] + 0.5


def test_identical_seeds_give_identical_reports():
    args = BbviArgs(n_groups=4, log10_lr=[-2.0, -1.5], steps=200, families=["structured", "full_rank"], workers=1)
    one, two = run_tool(args), run_tool(args.model_copy(update={"workers": 2}))
    assert one["families"] == two["families"]  # the worker processes change nothing


def test_bad_argument_names_the_field(capsys):
    from methods._tool import main
    from methods.structured_bbvi.tools import TOOLS

    assert main(TOOLS, ["--args", json.dumps({"families": ["lowrank"]})]) == 2
    assert "families" in json.loads(capsys.readouterr().out)["error"]
    with pytest.raises(ValidationError, match="n_groups"):
        BbviArgs(n_groups=0)


def test_authors_grid_and_iterations_are_one_argument_each():
    """The default grid is labcoat's "wide" and the cap 5,000; the authors' runs (grid
    10^-4 .. 10^-2.75, 50,000 iterations) are `log10_lr="authors"`, `steps=50000`."""
    default = BbviArgs()
    assert default.lr_grid() == [-3.5 + 0.25 * i for i in range(9)] and default.steps == 5000
    theirs = BbviArgs(log10_lr="authors", steps=50_000)
    assert theirs.lr_grid() == [-4.0, -3.75, -3.5, -3.25, -3.0, -2.75]
    assert theirs.steps == 50_000


# --- the structured-bbvi task ---------------------------------------------------------------

TASK = ROOT / "environments" / "tasks" / "structured-bbvi"


def test_task_families_match_the_library(problem32):
    """Through eval's autograd loop, env/ is the library's full-rank run, reference/ structured."""
    from methods.structured_bbvi.interface import run_family_module

    base = th.load_module(TASK / "env" / "family.py", "sb_env_family")
    got, _ = run_family_module(base, problem32, mc_seed=0, cap=300)
    q = Family.create("full_rank", problem32.dims)
    want = fit(problem32, q, make_optimizer("adam", q.leaves(), 1e-3), iters=300, target=0.5)
    assert [k for _, k in got.curve] == pytest.approx([k for _, k in want.curve], rel=1e-6)

    ref = th.load_module(TASK / "reference" / "family.py", "sb_ref_family")
    result, evals = run_family_module(ref, problem32, mc_seed=0)
    assert result.iters_to_eps == 900 and evals == 7200  # the library's structured run


def test_task_rejects_a_bad_config(problem32):
    from methods.structured_bbvi.interface import FamilyError, run_family_module

    bad = th.load_module(TASK / "env" / "family.py", "sb_bad_family")
    bad.CONFIG = {**bad.CONFIG, "optimizer": "lbfgs"}
    with pytest.raises(FamilyError):
        run_family_module(bad, problem32, mc_seed=0, cap=10)


def test_task_splits_are_problems_of_their_own():
    """search and select: 5 (problem seed, Monte Carlo seed) pairs each, none shared with test's
    or the public dev seeds."""
    ev = th.load_module(TASK / "scripts" / "eval.py", "sb_eval_splits")
    pairs = [pair for split in ("search", "select", "test") for pair in ev.SPLITS[split]]
    assert ev.SPLITS["test"] == ev.PRIVATE and len(pairs) == 15
    dev = set(th.load_module(TASK / "env" / "problem.py", "sb_env_problem").DEV_SEEDS)
    for seeds in zip(*pairs, strict=True):
        assert len(set(seeds)) == 15 and not set(seeds) & dev
    assert sorted(ev.split_members("search")) == sorted(f"{p}/{m}" for p, m in ev.SPLITS["search"])


@pytest.mark.slow
def test_task_reference_solves_the_search_and_select_problems():
    """The reference solves a search and a select problem as it does test's (600-900 its)."""
    from methods.structured_bbvi.interface import run_family_module
    from methods.structured_bbvi.problem import make_problem

    ev = th.load_module(TASK / "scripts" / "eval.py", "sb_eval_splits")
    ref = th.load_module(TASK / "reference" / "family.py", "sb_ref_family_splits")
    for split in ("search", "select"):
        problem_seed, mc_seed = ev.SPLITS[split][0]
        problem = make_problem(ev.N, ev.D_GLOBAL, ev.D_LOCAL, ev.OBS_PER_GROUP, problem_seed=problem_seed)
        result, _ = run_family_module(ref, problem, mc_seed)
        assert result.iters_to_eps is not None and result.iters_to_eps <= 2000, split
