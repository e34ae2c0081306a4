"""sparse-robustness and sparse-compression on the two-phase contract: the model as a graph.

produce.py (submission phase) and eval.py's loader (trusted phase) are called directly, in one
process, to check that the graph eval attacks or runs computes what the workspace's model does,
gradients included; the sandboxed path and the attacks are tests/environments/test_tamper.py's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from tests import task_checks as th

TASKS = Path(__file__).resolve().parents[2] / "environments" / "tasks"


def _workspace(tmp_path: Path, task: str, reference: bool = False) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(TASKS / task / "env", ws)
    if reference:
        shutil.copytree(TASKS / task / "reference", ws, dirs_exist_ok=True)
    return ws


def _produce(task: str, ws: Path, out: Path) -> None:
    scripts = TASKS / task / "scripts"
    th.load_module(scripts / "produce.py", f"{task}_produce").produce(ws, scripts, out)


def test_robustness_attacks_the_model_itself(tmp_path):
    ws = _workspace(tmp_path, "sparse-robustness")
    net = th.load_module(ws / "model.py", "sr_model").Net().eval()
    torch.save(net.state_dict(), ws / "model.pt")
    _produce("sparse-robustness", ws, tmp_path / "out")
    ev = th.load_module(TASKS / "sparse-robustness" / "scripts" / "eval.py", "sr_eval")
    graph = ev._load_model(tmp_path / "out")
    x = torch.rand(150, 1, 8, 8)  # not a multiple of the export batch
    xg, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    torch.testing.assert_close(graph(xg), net(xe), rtol=1e-6, atol=1e-6)
    torch.nn.functional.cross_entropy(graph(xg), torch.zeros(150, dtype=torch.long)).backward()
    torch.nn.functional.cross_entropy(net(xe), torch.zeros(150, dtype=torch.long)).backward()
    torch.testing.assert_close(xg.grad, xe.grad, rtol=1e-5, atol=1e-7)
    assert sum(p.numel() for p in graph.parameters()) == sum(p.numel() for p in net.parameters())


def test_robustness_without_model_pt_is_no_submission(tmp_path):
    ws = _workspace(tmp_path, "sparse-robustness")
    with pytest.raises(FileNotFoundError, match="model.pt"):
        _produce("sparse-robustness", ws, tmp_path / "out")


@pytest.mark.parametrize("reference", [False, True])
def test_compression_runs_the_decoder_itself(tmp_path, reference):
    ws = _workspace(tmp_path, "sparse-compression", reference)
    decoder = th.load_module(ws / "model.py", f"sc_model_{reference}").Decoder()
    with torch.no_grad():
        for p in decoder.parameters():
            p.normal_()
        if reference:
            decoder.c.fill_(0.7)
            decoder.sigma2.fill_(0.4)
    torch.save({"B": torch.randn(96, 96), "decoder": decoder.state_dict()}, ws / "model.pt")
    _produce("sparse-compression", ws, tmp_path / "out")
    from methods._exported import TensorSpec, load_exported_module

    graph = load_exported_module(tmp_path / "out", "decoder", (torch.ones(10_000, 96),),
                                 [TensorSpec(shape=(10_000, 96), dtype="float32")])
    z = torch.randint(0, 2, (10_000, 96)).float() * 2 - 1
    torch.testing.assert_close(graph(z), decoder(z), rtol=0, atol=0)


def test_compression_splits_are_samples_of_their_own(tmp_path):
    """search, select and test draw their samples from private seeds of their own: one decoder
    scores about the same on each (one chunk here, not 50,000 samples), never exactly."""
    ws = _workspace(tmp_path, "sparse-compression")
    decoder = th.load_module(ws / "model.py", "sc_model_splits").Decoder()
    torch.nn.init.zeros_(decoder.linear.weight)  # x_hat = 0: the MSE is E x^2 = 1 on any split
    torch.save({"B": torch.randn(96, 96), "decoder": decoder.state_dict()}, ws / "model.pt")
    _produce("sparse-compression", ws, tmp_path / "out")
    ev = th.load_module(TASKS / "sparse-compression" / "scripts" / "eval.py", "sc_eval_splits")
    ev.N_TEST = ev.CHUNK
    scores = [f(str(tmp_path / "out")) for f in (ev.search_score, ev.select_score, ev.score)]
    assert scores == pytest.approx([1.0] * 3, abs=0.03) and len(set(scores)) == 3
    assert len({m for s in ("search", "select", "test") for m in ev.split_members(s)}) == 3
