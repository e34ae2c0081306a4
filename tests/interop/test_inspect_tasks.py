"""labcoat's suite tasks as Inspect tasks (``interop/inspect/tasks.py``): a real
``inspect_ai.eval`` of ``labcoat/digits``, offline, with Inspect's ``mockllm`` model scripted to
call labcoat's actions as tools; the run it makes is a labcoat run folder, scored by labcoat's
own scorer (and again by ``labcoat score``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the Inspect extra is not installed: pip install -e '.[inspect]'")

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from typer.testing import CliRunner

import interop.inspect.tasks  # noqa: F401  (registers labcoat/<task>, as the entry point does)
from environments.record.runs import RunDir
from environments.task.suite import TASKS_DIR
from tui.cli import app

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = (TASKS_DIR / "digits" / "reference" / "train.py").read_text()


def run_eval(tmp_path: Path, outputs: list[ModelOutput], **task_args):
    """``inspect eval labcoat/digits -T ...`` with a scripted model (on the local sandbox unless
    ``task_args`` name another); the one sample's score and the run folder it made."""
    model = get_model("mockllm/model", custom_outputs=outputs, memoize=False)
    task_args = {"sandbox": "local", "runs_dir": str(tmp_path / "runs"), **task_args}
    [log] = inspect_eval("labcoat/digits", model=model, task_args=task_args,
                         log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples
    [score] = sample.scores.values()
    run = RunDir.open(Path(score.metadata["run"]))
    assert run.path.parent == tmp_path / "runs"
    return log, score, run


def call(tool: str, **args) -> ModelOutput:
    return counted(ModelOutput.for_tool_call("mockllm/model", tool, args))


def say(text: str) -> ModelOutput:
    return counted(ModelOutput.from_content("mockllm/model", text))


def counted(output: ModelOutput) -> ModelOutput:
    """With its usage given: mockllm otherwise counts tokens with tiktoken, which downloads
    its encoding (no network here)."""
    output.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
    return output


def test_a_model_that_does_nothing_is_scored_and_is_not_a_success(tmp_path):
    log, score, run = run_eval(tmp_path, [say("Nothing to do.")])
    assert log.eval.task == "labcoat/digits"
    assert log.samples[0].input.startswith("Improve the test accuracy")  # the research problem
    assert run.meta.status == "finished" and run.meta.final_answer is None
    assert run.meta.actor == "inspect" and run.steps() == []
    # labcoat's verdict: the starting workspace wrote no submission.csv
    assert score.metadata["success"] is False and score.metadata["failure"] is not None
    assert score.value == 0.0 and score.metadata["task"] == "digits"
    assert json.loads((run.path / "score.json").read_text())["success"] is False
    assert log.results.scores[0].metrics["success_rate"].value == 0.0


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow])])
def test_a_model_that_improves_the_script_is_scored_a_success_by_labcoat(tmp_path, backend):
    outputs = [call("Write_File", file_name="train.py", content=REFERENCE),
               call("Execute_Script", script_name="train.py"),
               call("Final_Answer", final_answer="standardised the inputs, a wider MLP")]
    log, score, run = run_eval(tmp_path, outputs, sandbox=backend)
    assert run.meta.sandbox == backend
    steps = run.steps()
    assert [s.action for s in steps] == ["Write File", "Execute Script", "Final Answer"]
    assert {s.actor for s in steps} == {"inspect"} and steps[1].exit_code == 0
    assert steps[0].meta == {"inspect_model": "mockllm/model"}
    assert (run.path / "workspace" / "submission.csv").is_file()
    assert run.meta.status == "finished" and run.meta.final_answer.startswith("standardised")
    # the tool result the model saw is the Environment's observation
    tool_messages = [m for m in log.samples[0].messages if m.role == "tool"]
    assert len(tool_messages) == 3 and "wrote submission.csv" in tool_messages[1].text
    meta = score.metadata
    assert meta["success"] is True and meta["failure"] is None, meta
    assert meta["value"] > 0.85 and meta["improvement"] > meta["threshold"]
    assert score.value == pytest.approx(meta["normalized"]) and score.value > 0.8
    assert score.answer.startswith("standardised") and score.explanation.endswith("; success")
    assert log.results.scores[0].metrics["success_rate"].value == 1.0

    # the run folder is labcoat's own: `labcoat score` scores it again, to the same verdict
    result = CliRunner().invoke(app, ["score", str(run.path), "--json"])
    assert result.exit_code == 0, result.output
    [again] = json.loads(result.output)
    assert again["success"] is True and again["value"] == pytest.approx(meta["value"])


def test_bad_arguments_are_refused_and_a_labcoat_budget_ends_the_sample(tmp_path):
    outputs = [call("Read_File", name="train.py"),  # the field is file_name
               call("List_Files", dir_path="."),
               call("List_Files", dir_path=".")]  # never asked for: the step budget ended the run
    log, score, run = run_eval(tmp_path, outputs, max_steps=1)
    refused, listed = [m for m in log.samples[0].messages if m.role == "tool"]
    # Inspect checks the call against the action's JSON Schema: the model is told which field,
    # and the Environment is never called (as labcoat's own agent does it)
    assert refused.error is not None and "file_name" in refused.error.message
    assert "train.py" in listed.text
    assert [s.action for s in run.steps()] == ["List Files"]
    assert (run.meta.status, run.meta.status_reason) == ("max_steps", "reached 1 steps")
    assert score.metadata["success"] is False and score.metadata["failure"] == "no_submission"


def test_a_sample_that_fails_leaves_its_run_ended_and_resumable_not_live(tmp_path):
    def broken(*_):
        raise RuntimeError("the model is down")

    model = get_model("mockllm/model", custom_outputs=broken, memoize=False)
    [log] = inspect_eval("labcoat/digits", model=model, log_dir=str(tmp_path / "logs"), display="none",
                         task_args={"sandbox": "local", "runs_dir": str(tmp_path / "runs")})
    assert log.status == "error" and "the model is down" in log.error.message
    [folder] = (tmp_path / "runs").iterdir()
    meta = RunDir.open(folder).meta
    assert meta.status == "interrupted" and "before it was scored" in meta.status_reason
    assert not (folder / "score.json").exists()
    # its drive thread is over (the sandbox closed with it)
    assert not [t for t in threading.enumerate() if t.name == f"labcoat-human-{meta.run_id}"]


@pytest.mark.skipif(not any(ep.name == "labcoat" for ep in entry_points(group="inspect_ai")),
                    reason="labcoat's inspect_ai entry point is not installed: pip install -e '.[inspect]'")
def test_inspect_finds_labcoat_tasks_through_the_entry_point():
    """A fresh process that never imports labcoat resolves ``labcoat/digits`` by name."""
    code = ("from inspect_ai._eval.registry import task_create\n"
            "t = task_create('labcoat/digits', sandbox='local')\n"
            "print(t.name, len(t.dataset))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False,
                         env={**os.environ}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["labcoat/digits", "1"]


def test_tasks_keep_the_labcoat_namespace_when_inspect_would_prefix_the_installed_package(monkeypatch):
    """Installed into site-packages, Inspect would name a task after its top-level package
    (``interop/...``); labcoat's are still ``labcoat/<name>``, and so are the tasks they make."""
    from inspect_ai._eval.registry import task_create
    from inspect_ai._util import registry

    from interop.inspect.tasks import _registered, labcoat_task

    monkeypatch.setattr(registry, "get_installed_package_name", lambda obj: "interop")

    def probe(sandbox: str = "local"):
        return labcoat_task("digits", sandbox=sandbox)

    _registered(probe, "labcoat/probe-task")
    assert registry.registry_lookup("task", "interop/labcoat/probe-task") is not None  # as Inspect named it
    made = task_create("labcoat/probe-task", sandbox="local")
    assert registry.registry_info(made).name == "labcoat/probe-task"
    assert made.name == "labcoat/digits" and made.dataset[0].id == "digits"
