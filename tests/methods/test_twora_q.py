"""2RA Q-learning: the spec's claims at the prototype's scale (one MDP, 20 runs, 100k steps)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from methods.twora_q import (
    bellman_backup,
    isotropic_penalty,
    make_learner,
    make_random_mdp,
    q_star,
    run_maxbias,
    run_random,
    sample_trajectories,
)
from methods.twora_q.experiment import streams
from tests import task_checks as th
from tests.methods.tool_run import ROOT, tool_process

STEPS, RUNS = 100_000, 20


@pytest.fixture(scope="session")
def dev_mdp():
    mdp = make_random_mdp(1234)
    return mdp, q_star(mdp)


@pytest.fixture(scope="session")
def stream(dev_mdp):
    """The transition stream seed 0 draws; shared so every method sees the same one."""
    mdp, _ = dev_mdp
    return sample_trajectories(mdp, STEPS, RUNS, streams(0)[0])


@pytest.fixture(scope="session")
def random_results(dev_mdp, stream):
    mdp, qs = dev_mdp
    out = {"q": run_random(make_learner("q"), mdp, alpha0=0.01, qstar=qs, transitions=stream)}
    for rho in (0.0, 50.0, 500.0):
        out[f"2ra_{rho:g}"] = run_random(
            make_learner("2ra", 10), mdp, alpha0=0.01, rho0=rho, qstar=qs, transitions=stream
        )
    return out


@pytest.fixture(scope="session")
def maxbias_results():
    return {
        "q": run_maxbias(make_learner("q")),
        "double": run_maxbias(make_learner("double")),
        "2ra": run_maxbias(make_learner("2ra", 5), rho0=0.5),
    }


@pytest.mark.slow
def test_bias_is_monotone_in_rho_with_a_sign_change(random_results):
    b0, b50, b500 = (random_results[f"2ra_{r}"].bias for r in ("0", "50", "500"))
    assert b0 > 0.1 > b50 > -0.2 > b500, (b0, b50, b500)


@pytest.mark.slow
def test_2ra_rho50_cuts_final_mse_fivefold(random_results):
    assert random_results["2ra_50"].mse_final < 0.2 * random_results["q"].mse_final


@pytest.mark.slow
def test_2ra_without_penalty_is_close_to_q(random_results):
    q, r0 = random_results["q"].mse_final, random_results["2ra_0"].mse_final
    assert abs(r0 - q) < 0.25 * q, (r0, q)


@pytest.mark.slow
def test_estimates_stay_finite(random_results, maxbias_results):
    for res in random_results.values():
        assert np.isfinite(res.q_bar).all()
        assert np.isfinite(res.mse).all()
    for res in maxbias_results.values():
        assert np.isfinite(res.bias) and np.isfinite(res.left_pct_curve).all()


def test_maxbias_pessimism_and_double(maxbias_results):
    q = maxbias_results["q"].left_pct_first50
    assert maxbias_results["2ra"].left_pct_first50 < q - 30
    assert maxbias_results["double"].left_pct_first50 < q


def test_2ra_with_one_table_and_no_penalty_is_q_learning(dev_mdp):
    mdp, qs = dev_mdp
    tr = sample_trajectories(mdp, 5000, 4, streams(3)[0])
    kw = dict(steps=5000, runs=4, seed=3, alpha0=0.05, qstar=qs, transitions=tr, log_every=1000)
    q = run_random(make_learner("q"), mdp, **kw)
    ra = run_random(make_learner("2ra", 1), mdp, rho0=0.0, **kw)
    assert np.array_equal(q.q_bar, ra.q_bar)
    assert q.mse == ra.mse


def test_q_star_satisfies_bellman(dev_mdp):
    mdp, qs = dev_mdp
    assert np.abs(bellman_backup(mdp, qs) - qs).max() < 1e-8


def test_random_mdp_matches_the_authors_construction():
    mdp = make_random_mdp(1234)
    assert mdp.P.shape == (3, 10, 10)
    np.testing.assert_allclose(mdp.P.sum(axis=2), 1.0)
    assert (mdp.R <= 0).all() and mdp.R[9, 2] == pytest.approx(-0.81 - 0.4)


def test_double_variants_read_the_other_table():
    q_next = np.array([[[1.0, 5.0]], [[3.0, 2.0]]])  # (N=2, runs=1, A=2)
    beta = np.array([0])
    vh = make_learner("double").bootstrap(q_next, beta, 0.0)
    au = make_learner("double", double_variant="authors").bootstrap(q_next, beta, 0.0)
    assert vh[0] == 2.0  # argmax from table 0 (action 1), value from table 1
    assert au[0] == 1.0  # argmax from table 1 (action 0), value from table 0


def test_2ra_target_is_mean_minus_sqrt_rho():
    q_next = np.array([[[1.0, 4.0]], [[3.0, 0.0]]])
    val = make_learner("2ra", 2).bootstrap(q_next, np.array([0]), isotropic_penalty(1.0, 4.0))
    assert val[0] == pytest.approx(2.0 - 2.0)


def _tool(args: dict) -> subprocess.CompletedProcess:
    return tool_process("methods.twora_q", args=args, timeout=120)


def test_tool_end_to_end():
    proc = _tool({"steps": 3000, "runs": 3, "log_every": 1000})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["config"]["n_tables"] == 10 and report["config"]["rho0"] == 50.0
    assert len(report["mse_curve"]) == 3 and np.isfinite(report["mse_final"])
    assert np.array(report["q_star"]).shape == (10, 3)
    proc = _tool({"env": "maxbias", "method": "q", "episodes": 60, "runs": 50})
    report = json.loads(proc.stdout)
    assert len(report["left_pct_curve"]) == 60 and report["config"]["n_tables"] == 1


def test_tool_bad_argument_names_the_field():
    proc = _tool({"rho0": -1})
    assert proc.returncode == 2
    assert "rho0" in json.loads(proc.stdout)["error"]


# --- the q-bias task: its engine (methods.twora_q.plugin) and eval gates, at small scale ----

NAME = "q-bias"
TASK = ROOT / "environments" / "tasks" / NAME


def test_plugin_with_the_reference_estimator_reproduces_the_library(dev_mdp):
    from methods.twora_q.plugin import run_estimator

    mdp, qs = dev_mdp
    ref = th.load_module(TASK / "reference" / "estimator.py", "ref_estimator")
    (plug,) = run_estimator(ref, [mdp], [qs], steps=4000, runs=5, seed=1, log_every=1000)
    lib = run_random(make_learner("2ra", 10), mdp, steps=4000, runs=5, seed=1, alpha0=0.01,
                     rho0=50.0, qstar=qs, log_every=1000)
    np.testing.assert_allclose(plug.mse, lib.mse, rtol=1e-9)


@pytest.fixture()
def quick_eval(tmp_path, monkeypatch):
    """The prepared task and its eval.py, imported here on its private data, with a short stream."""
    task = th.prepared_task(NAME)
    monkeypatch.delitem(sys.modules, "estimator", raising=False)
    quick = {"produce": {"STEPS": 3000, "RUNS": 4}, "eval": {"RUNS": 4}}
    outs = iter(range(100))

    class Quick:  # both scoring phases in this process (th.produce_and_score), a short stream
        @staticmethod
        def get_score(folder: str) -> float:
            sys.modules.pop("estimator", None)
            return th.produce_and_score(task, Path(folder), tmp_path / f"out{next(outs)}", quick)

    return task, Quick


def test_each_private_split_scores_on_its_own_mdps(tmp_path, monkeypatch):
    """search and select are 5 MDPs each of their own (seeds disjoint from test's), scored like
    test: the reference beats plain Q-learning on every split (short stream)."""
    task = th.prepared_task(NAME)
    ev = th.load_eval(task)
    members = {s: set(ev.split_members(s)) for s in ("search", "select", "test")}
    assert all(len(m) == 5 for m in members.values())
    assert not (members["search"] & members["select"] or members["test"] & (members["search"] | members["select"]))
    quick = {"produce": {"STEPS": 2000, "RUNS": 2}, "eval": {"RUNS": 2}}
    for split in ("search", "select"):
        scores = []
        for reference in (False, True):
            monkeypatch.delitem(sys.modules, "estimator", raising=False)
            ws = th.make_workspace(task, tmp_path / f"{split}{reference}", reference=reference)
            scores.append(th.produce_and_score(task, ws, tmp_path / f"out-{split}{reference}", quick, split))
        assert np.isfinite(scores).all() and scores[1] < scores[0], (split, scores)
