"""Unknown action names in ``--actions`` are refused before anything starts (#27.7): a usage
error naming the action and what the task offers, no run folder, for `run` and `batch`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tui.cli import app


def test_an_unknown_action_in_actions_is_a_usage_error_before_any_run(tiny_task, tmp_path):
    actions = tmp_path / "actions.jsonl"
    actions.write_text("".join(json.dumps(a) + "\n" for a in [
        {"action": "List Files", "args": {"dir_path": "."}},
        {"action": "Frobnicate", "args": {}}]))
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["run", str(tiny_task), "--actions", str(actions),
                                      "--sandbox", "local", "--runs-dir", str(runs)])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "offers no action 'Frobnicate'" in said, result.output
    assert "List Files" in said.split("it offers:")[1]  # what it could have said instead
    assert not runs.exists()
    batch = CliRunner().invoke(app, ["batch", "--tasks", str(tiny_task), "--agent", "replay",
                                     "--actions", str(actions), "--sandbox", "local",
                                     "--dir", str(tmp_path / "b")])
    assert batch.exit_code == 2 and "Frobnicate" in batch.output, batch.output
    assert not (tmp_path / "b").exists()
