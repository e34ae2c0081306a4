"""structured-bbvi on the two-phase contract: family.py becomes data, the loop runs on a graph.

produce.py (submission phase) and eval.py (trusted phase) are called directly here, in one
process, to check that the exported family fits exactly as family.py itself does; the sandboxed
path and the attacks are tests/environments/test_tamper.py's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from methods.structured_bbvi.interface import run_family_module
from methods.structured_bbvi.problem import make_problem
from tests import task_checks as th

TASK = Path(__file__).resolve().parents[2] / "environments" / "tasks" / "structured-bbvi"


def _produced(tmp_path: Path, reference: bool) -> tuple[Path, object]:
    ws = tmp_path / "ws"
    shutil.copytree(TASK / "env", ws)
    if reference:
        shutil.copytree(TASK / "reference", ws, dirs_exist_ok=True)
    out = tmp_path / "out"
    th.load_module(TASK / "scripts" / "produce.py", "sb_produce").produce(ws, TASK / "scripts", out)
    return out, th.load_module(ws / "family.py", f"sb_family_{reference}")


@pytest.mark.parametrize("reference", [False, True])
def test_the_exported_family_fits_as_family_py_does(tmp_path, reference):
    out, family = _produced(tmp_path, reference)
    ev = th.load_module(TASK / "scripts" / "eval.py", "sb_eval")
    loaded = ev.load_family(out)
    assert loaded.CONFIG == family.CONFIG
    problem = make_problem(32, problem_seed=0)
    want, _ = run_family_module(family, problem, mc_seed=0, cap=300)
    got, _ = run_family_module(loaded, problem, mc_seed=0, cap=300)
    assert [k for _, k in got.curve] == pytest.approx([k for _, k in want.curve], rel=1e-9)

