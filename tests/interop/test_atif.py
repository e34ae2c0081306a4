"""``labcoat export atif``: runs as ATIF v1.7 trajectories (Harbor's Agent Trajectory Interchange
Format), validated against labcoat's models of the format (interop/atif/models.py, written from
the specification: its required fields, types and stated rules).

The runs are real: a research-agent run with the scripted model (and a fork of it), a solution-
tree run, and an imported MLAgentBench log, made with the agent and import tests' helpers.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from agent.actor import Proposal
from agent.fork import fork_config, fork_run
from agent.replay import ReplayActor
from agent.runner import drive
from environments.record.runs import Budgets, RunDir
from environments.scoring.score import score_run
from interop.atif import SCHEMA_VERSION, Trajectory, export_run
from tests.agent.helpers import episode, react, write_replies
from tests.agent.test_tree_agent import reply, run_tree, tree_agent, writes
from tests.conftest import write_task
from tests.environments.test_mlab_import import (
    ARGS,
    do_import,
    good_steps,
    make_log,
    make_task,
)
from tui.cli import app


def export_cli(*args: str) -> str:
    result = CliRunner().invoke(app, ["export", "atif", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def validated(text: str) -> Trajectory:
    """The exported text read back as ATIF: a JSON object the format's models accept."""
    data = json.loads(text)
    assert data["schema_version"] == SCHEMA_VERSION == "ATIF-v1.7"
    return Trajectory.model_validate(data)


def agent_steps(t: Trajectory):
    return [s for s in t.steps if s.source == "agent"]


@pytest.fixture(scope="module")
def research(tmp_path_factory):
    """A scripted research-agent run on a tiny task, scored, and a fork of it at step 2."""
    tmp = tmp_path_factory.mktemp("research")
    task = write_task(tmp / "tiny", files={"reference/train.py": "open('result.txt','w').write('60')\n"})
    replies = [react("List Files", {"dir_path": "."}, thought="look first"),
               react("Write File", {"file_name": "train.py",
                                    "content": "open('result.txt', 'w').write('42')\n"}),
               react("Execute Script", {"script_name": "train.py"}),
               react("Final Answer", {"final_answer": "wrote 42"})]
    run, spec, meta = episode(task, tmp, write_replies(tmp / "r.txt", replies))
    assert meta.status == "finished", meta.status_reason
    assert score_run(run, spec, sandbox="local").value == 42.0
    parent = RunDir.open(run.path)
    # a replay holds the whole episode from step 1 (the trace's steps are skipped)
    cont = ReplayActor([Proposal(action=s.action, args=s.args) for s in parent.steps()[:2]]
                       + [Proposal(action="Final Answer", args={"final_answer": "stopped early"})])
    fork, fork_spec = fork_run(parent, 2, cont, config=fork_config(parent, {})[0])
    fork_meta = drive(fork, fork_spec, cont)
    assert fork_meta.status == "finished", fork_meta.status_reason
    return RunDir.open(run.path), RunDir.open(fork.path)


def test_a_research_run_exports_steps_tool_calls_observations_tokens_and_score(research, tmp_path):
    run, _ = research
    out = tmp_path / "t.json"
    export_cli(str(run.path), "-o", str(out))
    t = validated(out.read_text())
    assert t.session_id == run.meta.run_id and t.agent.name == "labcoat/research"
    assert t.agent.model_name == run.meta.model and t.agent.version
    assert [s.source for s in t.steps[:2]] == ["system", "user"]
    assert "Make result.txt as large as you can." in t.steps[1].message
    steps = agent_steps(t)
    trace = run.steps()
    assert [s.tool_calls[0].function_name for s in steps] == [s.action for s in trace] == \
        ["List Files", "Write File", "Execute Script", "Final Answer"]
    assert steps[1].tool_calls[0].arguments["file_name"] == "train.py"
    assert steps[0].reasoning_content == "look first" and "Action: List Files" in steps[0].message
    result = steps[2].observation.results[0]
    assert result.source_call_id == steps[2].tool_calls[0].tool_call_id
    assert result.content == trace[2].observation and result.extra["labcoat"]["exit_code"] == 0
    # tokens a step, from the call log, add up to the run's totals
    assert all(s.metrics is not None and s.metrics.prompt_tokens > 0 and s.llm_call_count == 1
               for s in steps)
    totals = run.meta.totals
    assert sum(s.metrics.prompt_tokens for s in steps) == totals.tokens_in == \
        t.final_metrics.total_prompt_tokens
    assert sum(s.metrics.completion_tokens for s in steps) == t.final_metrics.total_completion_tokens
    assert t.final_metrics.total_steps == len(t.steps) == len(trace) + 2
    score = t.final_metrics.extra["labcoat"]["score"]
    assert score["value"] == 42.0 and score["success"] is True and score["improvement"] > 0
    labcoat = t.extra["labcoat"]
    assert labcoat["final_answer"] == "wrote 42" and labcoat["status"] == "finished"
    # the snapshots ride along: each step names its own
    assert [s.extra["labcoat"]["snapshot"] for s in steps] == ["00001", "00002", "00003", "00004"]
    assert steps[2].extra["labcoat"]["changed"] == ["result.txt"]
    assert steps[-1].extra["labcoat"]["final_answer"] is True
    assert [f["run_id"] for f in labcoat["forks"]] == [research[1].meta.run_id]


def test_a_fork_marks_its_inherited_prefix_as_copied_context(research):
    parent, fork = research
    t = export_run(fork.path)
    Trajectory.model_validate(t.to_json_dict())
    steps = agent_steps(t)
    assert [s.is_copied_context for s in steps] == [True, True, None]
    assert [s.tool_calls[0].function_name for s in steps] == ["List Files", "Write File", "Final Answer"]
    assert steps[0].metrics is None  # the prefix's calls were the parent's, not counted twice
    assert t.extra["labcoat"]["fork"]["parent"] == parent.meta.run_id
    assert t.extra["labcoat"]["fork"]["step"] == 2 and "Forked from run" in t.notes


def test_a_tree_run_exports_its_nodes(tiny_task, tmp_path):
    codes = [writes(50, 50), writes(40, 40), writes(70, 70)]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    run, _, meta = run_tree(tiny_task, tmp_path, tree_agent(model, num_drafts=3), model,
                            Budgets(max_steps=7))
    assert meta.status == "finished", meta.status_reason
    t = validated(export_cli(str(run.path)))
    assert t.agent.name == "labcoat/tree"
    steps = agent_steps(t)
    assert steps[-1].tool_calls[0].function_name == "Final Answer"
    assert "Restore Workspace" in [s.tool_calls[0].function_name for s in steps]
    nodes = t.extra["labcoat"]["tree_nodes"]
    assert nodes and nodes == [s.meta["tree"] for s in run.steps() if "tree" in s.meta]
    tagged = [s for s in steps if "tree" in s.extra["labcoat"]["meta"]]
    assert tagged and sum(s.llm_call_count or 0 for s in steps) == meta.totals.llm_calls == 2
    assert t.final_metrics.total_prompt_tokens == meta.totals.tokens_in > 0


def test_an_imported_mlagentbench_run_exports(tmp_path):
    task = make_task(tmp_path)
    values = [11.0, 19.0, 33.0]
    log = make_log(tmp_path / "log", good_steps(values), final=good_steps(values)[-1][3], args=ARGS)
    out = do_import(log, tmp_path / "runs", task)
    assert out.status == "imported"
    t = validated(export_cli(str(out.run_dir)))
    assert t.agent.name.startswith("labcoat/") and t.agent.model_name == "mlab/claude-v1"
    steps = agent_steps(t)
    assert [s.tool_calls[0].function_name for s in steps] == \
        ["List Files", "Edit Script (AI)", "Execute Script", "Final Answer"]
    assert steps[1].tool_calls[0].arguments["edit_instruction"] == "fit a model"
    assert steps[0].observation.results[0].content.startswith("backup/")
    assert all(s.metrics is None for s in steps)  # MLAgentBench logs no tokens: none invented
    assert t.extra["labcoat"]["final_answer"] == "a random forest"


def test_a_folder_of_runs_exports_each(research, tmp_path):
    runs_dir = research[0].path.parent
    lines = export_cli(str(runs_dir)).splitlines()
    ids = {validated(line).session_id for line in lines}
    assert ids == {research[0].meta.run_id, research[1].meta.run_id}
    export_cli(str(runs_dir), "-o", str(tmp_path / "out"))
    files = sorted((tmp_path / "out").glob("*.json"))
    assert {f.stem for f in files} == ids
    for f in files:
        validated(f.read_text())
    bad = CliRunner().invoke(app, ["export", "atif", str(tmp_path / "nothing")])
    assert bad.exit_code == 2 and "no such folder" in bad.output


# ---- the models refuse what the format does not allow -------------------------------------------

def minimal() -> dict:
    return {"schema_version": "ATIF-v1.7", "session_id": "s",
            "agent": {"name": "a", "version": "1"},
            "steps": [{"step_id": 1, "source": "user", "message": "hi"},
                      {"step_id": 2, "source": "agent", "message": "ok",
                       "tool_calls": [{"tool_call_id": "c1", "function_name": "f", "arguments": {}}],
                       "observation": {"results": [{"source_call_id": "c1", "content": "done"}]}}]}


def broken(change) -> dict:
    data = minimal()
    change(data)
    return data


@pytest.mark.parametrize("change", [
    lambda d: d["agent"].pop("version"),
    lambda d: d.pop("steps"),
    lambda d: d.update(steps=[]),
    lambda d: d.update(schema_version="ATIF-v2.0"),
    lambda d: d["steps"][1].update(step_id=3),
    lambda d: d["steps"][0].update(source="tool"),
    lambda d: d["steps"][0].pop("message"),
    lambda d: d["steps"][0].update(metrics={"prompt_tokens": 1}),
    lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="c9"),
    lambda d: d["steps"][1]["tool_calls"][0].update(arguments="not an object"),
    lambda d: d["steps"][1].update(timestamp="yesterday"),
    lambda d: d.update(labcoat={"extension": "outside extra"}),
], ids=["agent-version", "no-steps", "empty-steps", "version", "step-ids", "source", "message",
        "metrics-on-user", "dangling-call-id", "arguments", "timestamp", "unknown-field"])
def test_the_models_refuse_what_atif_does_not_allow(change):
    Trajectory.model_validate(minimal())
    with pytest.raises(ValidationError):
        Trajectory.model_validate(broken(change))


HARBOR_CHECK = """
import sys
from harbor.utils.trajectory_validator import TrajectoryValidator
bad = []
for path in sys.argv[1:]:
    v = TrajectoryValidator()
    if not v.validate(path):
        bad.append(f"{path}: {v.get_errors()}")
print("\\n".join(bad) or "all valid")
sys.exit(1 if bad else 0)
"""


def test_harbors_own_validator_accepts_the_exports(research, tiny_task, tmp_path):
    """Harbor itself needs Python >= 3.12 (this venv is 3.11) and the network to install, so
    this check runs only where ``LABCOAT_HARBOR_PYTHON`` names an interpreter with harbor:
    ``python3.12 -m venv V && V/bin/pip install harbor``, then ``LABCOAT_HARBOR_PYTHON=V/bin/python``."""
    import os
    import subprocess

    python = os.environ.get("LABCOAT_HARBOR_PYTHON")
    if not python:
        pytest.skip("LABCOAT_HARBOR_PYTHON is not set (a Python >= 3.12 with `pip install harbor`)")
    if subprocess.run([python, "-c", "import harbor.utils.trajectory_validator"],
                      capture_output=True).returncode != 0:
        pytest.skip(f"{python} cannot import harbor (pip install harbor into it)")
    files = []
    for name, run in (("research", research[0]), ("fork", research[1])):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(export_cli(str(run.path)))
    broken = tmp_path / "broken.json"  # the check can fail: a user step with a tool call
    data = json.loads(files[0].read_text())
    data["steps"][1]["tool_calls"] = data["steps"][2]["tool_calls"]
    broken.write_text(json.dumps(data))
    ok = subprocess.run([python, "-c", HARBOR_CHECK, *map(str, files)], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = subprocess.run([python, "-c", HARBOR_CHECK, str(broken)], capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 1 and "broken.json" in refused.stdout
