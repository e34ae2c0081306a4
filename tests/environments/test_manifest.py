"""The run manifest in run.json: machine, sandbox and what it isolated, wall clock, models,
and the test signal (Validate Submission calls) the actor saw."""

from __future__ import annotations

import json
import os

from agent.actor import Proposal
from agent.config import ActorConfig
from agent.replay import ReplayActor
from agent.runner import create_run, drive, model_uses
from environments.acting.validation import VALIDATE, validation_calls
from environments.record.manifest import RunManifest, lookup, machine
from environments.record.runs import RunDir, Step


def test_machine_is_read_from_this_host():
    m = machine()
    assert m.cores == os.cpu_count() and m.memory_gb > 0 and m.python
    with open("/proc/cpuinfo") as f:
        assert m.cpu_model in f.read()


def test_validation_calls_are_read_from_the_trace():
    steps = [
        Step(index=1, actor="agent", action="List Files", observation=""),
        Step(index=2, actor="agent", action=VALIDATE, observation="",
             data={"counted": True, "value": 0.81, "failure": None, "left": 1}),
        Step(index=3, actor="agent", action=VALIDATE, observation="", error=True,
             data={"counted": False, "value": None, "failure": "infrastructure"}),
    ]
    calls = validation_calls(steps)
    assert [(c.step, c.counted, c.value, c.failure, c.left) for c in calls] == [
        (2, True, 0.81, None, 1), (3, False, None, "infrastructure", None)]
    # the manifest stores these same records (one model for the trace, manifests and reports)
    assert RunManifest(validations=calls).validations == calls


def test_model_uses_name_their_providers():
    uses = model_uses({"main": "openai/gpt-4o", "fast": "openai/gpt-4o-mini", "edit": None})
    assert [(u.role, u.provider) for u in uses] == [("main", "openai"), ("fast", "openai")]


def test_a_finished_run_carries_its_manifest(tiny_task, tmp_path):
    actor = ReplayActor([Proposal(action="List Files", args={"dir_path": "."}),
                         Proposal(action="Final Answer", args={"final_answer": "x"})])
    config = ActorConfig(kind="replay", model="replay/inline")
    run, task = create_run(tiny_task, actor, tmp_path / "runs", config=config, sandbox="local")
    drive(run, task, actor)
    data = json.loads((run.path / "run.json").read_text())
    manifest = RunDir.open(run.path).meta.manifest
    assert manifest.machine.cores == os.cpu_count()
    assert manifest.sandbox.backend == "local" and manifest.sandbox.filesystem and manifest.sandbox.network
    assert manifest.started_at and manifest.ended_at and manifest.wall_seconds == data["totals"]["seconds"]
    assert [(u.role, u.provider) for u in manifest.models] == [("main", "replay")]
    assert manifest.validations == []
    # what reports filter on
    assert lookup(data, "backend") == "local" and lookup(data, "validations") == 0
    assert lookup(data, "gpu") == ("none" if not manifest.machine.gpus else ",".join(manifest.machine.gpus))
    assert lookup(data, "manifest.machine.cores") == os.cpu_count() and lookup(data, "no.such") is None


def test_validate_submission_calls_land_in_the_manifest(tmp_path):
    from tests.environments.test_scoring import run_actions, tamper_task

    root = tamper_task(tmp_path / "val", "[feedback]\nkind = \"validation\"\nbudget = 2\n")
    run, _ = run_actions(root, tmp_path, [{"action": VALIDATE, "args": {}},
                                         {"action": "Final Answer", "args": {"final_answer": "x"}}])
    (call,) = RunDir.open(run.path).meta.manifest.validations
    assert (call.step, call.counted, call.value, call.failure) == (1, True, 0.5, None)
