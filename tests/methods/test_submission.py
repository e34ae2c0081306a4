"""methods/_submission.py: what every method task's eval.py uses to import the scored file."""

from __future__ import annotations

import sys

import pytest

from methods._submission import load_submission


def test_a_missing_file_is_the_error_the_scorer_reads_as_no_submission(tmp_path):
    with pytest.raises(FileNotFoundError, match="the workspace has no policy.py"):
        load_submission(tmp_path, "policy.py")


def test_the_file_imports_its_neighbours_and_each_load_is_fresh(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("policy_submission", "policy_probe", "helper_for_policy"):  # absent again afterwards
        monkeypatch.setitem(sys.modules, name, None)
        monkeypatch.delitem(sys.modules, name)
    (tmp_path / "helper_for_policy.py").write_text("SCALE = 3\n")
    (tmp_path / "policy.py").write_text("from helper_for_policy import SCALE\ncalls = []\n"
                                        "def decide(x):\n    calls.append(x)\n    return SCALE * x\n")
    first = load_submission(tmp_path, "policy.py")
    assert first.decide(2) == 6 and first.calls == [2]
    second = load_submission(str(tmp_path), "policy.py", name="policy_probe")
    assert second.calls == [] and sys.modules["policy_probe"] is second
    assert sys.modules["policy_submission"] is first
