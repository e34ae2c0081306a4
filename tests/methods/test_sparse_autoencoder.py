"""1-bit sparse autoencoders: the spec's "Tests that must hold" (CPU, fixed seeds)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import torch

from methods.sparse_autoencoder import (
    encode,
    gaussian_benchmark,
    identity_closed_form,
    initial_encoder,
    mse,
    population_loss,
    refit_linear,
    sample,
)
from methods.sparse_autoencoder.data import generator
from methods.sparse_autoencoder.run import sparse_ae_compress
from methods.sparse_autoencoder.tools import SparseAECompressArgs
from tests.methods.tool_run import tool_process

GAUSS = 1.0 - 2.0 / math.pi


pytestmark = pytest.mark.usefixtures("one_thread")


def _report(tmp_path: Path, **kw) -> dict:
    return sparse_ae_compress(SparseAECompressArgs(out=str(tmp_path / "w.npz"), **kw))


# ----------------------------------------------------------------------------- 1. benchmark


@pytest.mark.parametrize("rate", [0.5, 1.0])
def test_gaussian_benchmark_is_attained_by_a_rotation(rate):
    d = 96
    n = round(rate * d)
    B = initial_encoder("rotation", n, d, generator(0, 1))
    A = math.sqrt(2 / math.pi) * B.T
    exact = population_loss(A, B, 1.0, torch.ones(1, d, dtype=B.dtype))
    assert abs(float(exact) - gaussian_benchmark(n / d)) < 1e-5
    mc = mse(B, lambda Z: Z @ A.T, "gaussian", 1.0, 50_000, generator(0, 4))
    assert abs(mc - gaussian_benchmark(n / d)) < 0.005


# -------------------------------------------------------------- 2. population = Monte Carlo


def test_population_loss_matches_monte_carlo():
    d, p = 32, 0.3
    gen = generator(5, 0)
    B = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    A = 0.3 * torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    masks = (torch.rand(4096, d, generator=gen, dtype=torch.float64) < p).double()
    pop = float(population_loss(A, B, p, masks))
    mc = mse(B, lambda Z: Z @ A.T, "bg", p, 200_000, generator(5, 1))
    assert abs(pop - mc) < 0.01


# ------------------------------------------------------------------ 3. identity closed forms


@pytest.mark.parametrize("kind,p,d", [("bg", 0.2, 96), pytest.param("bg", 0.5, 96, marks=pytest.mark.slow),
                                      ("sparse_rademacher", 0.2, 64),
                                      ("sparse_rademacher", 0.8, 64)])
def test_identity_encoder_matches_closed_form(kind, p, d):
    B = torch.eye(d, dtype=torch.float64)
    A = refit_linear(B, kind, p, 200_000, generator(0, 2))
    got = mse(B, lambda Z: Z @ A.T, kind, p, 50_000, generator(0, 4))
    closed = identity_closed_form(kind, p)
    assert closed - 0.005 <= got <= closed + 0.02


# ----------------------------------------------------------- 4-5. BG: GD ignores sparsity


@pytest.fixture(scope="module")
def bg_run(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("bg"), source="bg", p=0.3, decoder="denoiser")


@pytest.mark.slow
def test_bg_gd_behaves_like_a_gaussian_source(bg_run):
    assert abs(bg_run["mse_linear"] - GAUSS) < 0.04
    assert bg_run["row_max_entry"] < 0.5


@pytest.mark.slow
def test_bg_denoiser_helps(bg_run):
    assert bg_run["mse_denoiser"] < GAUSS - 0.05
    assert bg_run["mse_denoiser"] < bg_run["mse_linear"] - 0.05
    assert bg_run["mse"] == bg_run["mse_denoiser"]


# ----------------------------------------------------------------------- 6. the transition

SURROGATE = dict(source="sparse_rademacher", d=64, train="surrogate", baselines=True,
                 n_refit=100_000)


@pytest.mark.slow
def test_sparse_rademacher_low_density_stays_delocalised(tmp_path):
    r = _report(tmp_path, p=0.2, **SURROGATE)
    assert r["row_max_entry"] < 0.45
    assert r["mse"] <= r["mse_rotation"] + 0.02


@pytest.mark.slow
def test_sparse_rademacher_high_density_learns_the_identity(tmp_path):
    r = _report(tmp_path, p=0.8, **SURROGATE)
    assert r["row_max_entry"] > 0.9
    assert r["mse"] <= r["mse_rotation"] - 0.1


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.4, 0.6, 1.0])
def test_sparse_rademacher_other_densities(tmp_path, p):
    r = _report(tmp_path, p=p, **SURROGATE)
    print(p, r["row_max_entry"], r["mse"], r["mse_identity"], r["mse_rotation"])
    # p = 0.4 and 0.6 sit around the switch (closed-form estimate 0.44): recorded, not asserted
    # (at p = 0.6 GD localised, row max 1.00, but onto repeated coordinates: MSE 0.384 against
    # the identity's 0.296)
    assert 0.0 <= r["mse"] <= 1.0
    if p == 1.0:
        assert r["mse"] <= r["mse_rotation"] - 0.1


# ------------------------------------------------------------------------------ 7. invariants


def test_encoder_invariants():
    d = 32
    gen = generator(1, 0)
    B = torch.randn(24, d, generator=gen, dtype=torch.float64)
    X = sample("bg", 0.3, 500, d, gen)
    Z = encode(B, X)
    assert set(Z.unique().tolist()) <= {-1.0, 1.0}
    assert torch.all(encode(B, torch.zeros(3, d, dtype=torch.float64)) == 1.0)
    scale = torch.rand(24, 1, generator=gen, dtype=torch.float64) + 0.1
    assert torch.equal(encode(scale * B, X), Z)


def test_row_scaling_leaves_every_mse_unchanged():
    d = 32
    B = initial_encoder("gaussian", d, d, generator(2, 0))
    scaled = B * (torch.rand(d, 1, generator=generator(2, 1), dtype=B.dtype) * 5 + 0.2)
    mses = []
    for enc in (B, scaled):
        A = refit_linear(enc, "bg", 0.3, 20_000, generator(2, 2))
        mses.append(mse(enc, lambda Z, A=A: Z @ A.T, "bg", 0.3, 20_000, generator(2, 3)))
    assert mses[0] == mses[1]


def test_bits_and_determinism(tmp_path):
    args = dict(d=40, rate=0.5, steps=20, n_test=2000, n_fit=2000, decoder="denoiser")
    a, b = _report(tmp_path, **args), _report(tmp_path, **args)
    assert a["n_bits"] == round(0.5 * 40) == 20
    assert a == b
    assert a["gaussian_benchmark"] == pytest.approx(1 - 2 * 0.5 / math.pi)


# -------------------------------------------------------------------------------- the tool


def _tool(args: dict, cwd: Path) -> subprocess.CompletedProcess:
    return tool_process("methods.sparse_autoencoder", args=args, cwd=cwd)


def test_tool_end_to_end(tmp_path):
    res = _tool({"d": 32, "steps": 30, "n_test": 5000, "baselines": True, "n_refit": 5000},
                tmp_path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert (tmp_path / report["weights_npz"]).exists() and report["n_bits"] == 32
    assert report["mse_identity"] is not None and report["mse_rotation"] is not None


def test_tool_errors_name_their_field(tmp_path):
    cases = [({"source": "sparse_rademacher", "train": "population"}, "train"),
             ({"rate": 1.5}, "rate"),
             ({"encoder_init": "identity", "rate": 0.5}, "encoder_init")]
    for args, field in cases:
        res = _tool(args, tmp_path)
        assert res.returncode == 2 and field in json.loads(res.stdout)["error"], res.stdout


# ------------------------------------------------------------------------------- the task
