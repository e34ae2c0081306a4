"""One typed run configuration: stored in run.json, resumed by model_validate, flags for every
field, old run.json files migrated, and the seed reaching the actor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main

from agent.config import OPTIONS, ActorConfig, OptionError, build
from agent.context import ContextSettings
from agent.factory import AgentConfigError, make_actor, resolve, seeded
from agent.models import ModelRef
from agent.models.scripted import ScriptedModel
from agent.runner import Budgets, create_run, drive
from environments.record.runs import RunDir, RunMeta
from tests.agent.helpers import react, write_replies
from tests.conftest import write_task


def test_config_round_trips_through_run_json_to_resume(tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("Final Answer", {"final_answer": "x"})])
    config = resolve(ActorConfig(model=model, mode="tools", seed=7, observation_cap=2000,
                                 context=ContextSettings(keep_last=2, fold_repeats=0)))
    budgets = Budgets(max_steps=4, max_cost=0.5)
    run, _ = create_run(tiny_task, make_actor(config), tmp_path / "runs", config=config,
                        sandbox="local", budgets=budgets)
    stored = json.loads((run.path / "run.json").read_text())
    assert stored["config"]["context"]["keep_last"] == 2 and stored["config"]["mode"] == "tools"
    again = RunDir.open(run.path)
    assert ActorConfig.from_meta(again.meta) == config  # resume is model_validate of what was stored
    limits = again.meta.budgets  # ours, with the task's time budget filling the one left open
    assert isinstance(limits, Budgets) and (limits["max_steps"], limits.max_cost) == (4, 0.5)
    assert limits.max_time is not None
    assert (again.meta.agent, again.meta.model, again.meta.seed) == ("research", model, 7)


def test_every_field_is_an_option_with_a_flag_in_run_and_batch():
    from agent.pool.settings import PoolSettings
    from agent.tree.policy import PolicySettings
    from agent.tree.settings import TreeSettings
    from tui.cli import app

    fields = (set(ActorConfig.model_fields) - {"context", "tree", "pool"} | set(ContextSettings.model_fields)
              | set(TreeSettings.model_fields) - {"policy"} | set(PolicySettings.model_fields)
              | set(PoolSettings.model_fields) | set(Budgets.model_fields))
    assert {o.name for o in OPTIONS} == fields
    click = typer.main.get_command(app)
    run_flags = {f for p in click.commands["run"].params for f in (*p.opts, *p.secondary_opts)}
    batch_flags = {f for p in click.commands["batch"].params for f in (*p.opts, *p.secondary_opts)}
    for o in OPTIONS:
        spelled = {f for flag in o.flags for f in flag.split("/")}  # --x/--no-x: both ways
        assert spelled <= run_flags, o.name
        if o.name not in ("model", "seed"):  # a batch sets these per combination
            assert spelled <= batch_flags, o.name
    # the help is the model's description with the model's default, never a copy
    keep = next(o for o in OPTIONS if o.name == "keep_last")
    assert keep.default == ContextSettings().keep_last and "default:" in keep.hint


def test_bad_values_are_named_by_their_flag():
    with pytest.raises(OptionError, match=r"--max-steps: .*greater than or equal to 1"):
        build({"max_steps": "0"})
    config, budgets = build({"mode": "tools", "keep_last": "1", "max_time": "2.5"})
    assert config.mode == "tools" and config.context.keep_last == 1 and budgets.max_time == 2.5
    with pytest.raises(AgentConfigError, match="extra_knob"):
        make_actor("baseline", extra_knob=1)  # a field nobody has is an error, not ignored


def test_run_json_written_before_typed_configs_still_loads(tmp_path):
    old = {  # as the previous runs.py and `labcoat run` wrote it
        "run_id": "r1", "task": "digits", "task_root": str(tmp_path), "actor": "agent",
        "agent": "research", "model": "openai/gpt-4o", "seed": 2, "sandbox": "docker",
        "limits": {"max_steps": 30, "max_time": None, "max_tokens": None, "max_cost": 1.0},
        "settings": {"task_source": "/tasks/digits", "agent_type": "research", "mode": "tools",
                     "fast_model": None, "edit_model": None, "observation_cap": 5000,
                     "context": {"keep_last": 2, "summarize_over": 900, "fold_repeats": 5}},
        "status": "finished", "totals": {"steps": 3},
    }
    (tmp_path / "run.json").write_text(json.dumps(old))
    meta = RunDir.open(tmp_path).meta
    config = ActorConfig.from_meta(meta)
    assert (config.kind, config.model, config.seed, config.mode) == ("research", "openai/gpt-4o", 2, "tools")
    assert config.context.summarize_over == 900 and config.observation_cap == 5000
    assert meta.budgets.max_cost == 1.0 and meta.task_source == "/tasks/digits"
    # a TUI or batch run of old recorded the actor's kind as its agent: no factory choice
    tui_old = {**old, "agent": "agent", "settings": {}}
    assert RunMeta.model_validate(tui_old).config.kind is None
    assert RunMeta.model_validate(tui_old).agent == "agent"


def test_seed_reaches_the_model_string_and_the_scripted_model(tmp_path):
    def spec(model: str) -> str:
        return seeded(ModelRef.parse(model), 3).spec

    assert spec("openai/gpt-4o") == "openai/gpt-4o?seed=3"
    assert spec("llamacpp/x.gguf?n_ctx=2048") == "llamacpp/x.gguf?n_ctx=2048&seed=3"
    assert spec("openai/gpt-4o?seed=9") == "openai/gpt-4o?seed=9"  # the string's own wins
    assert spec("anthropic/claude-haiku-4-5") == "anthropic/claude-haiku-4-5"  # takes none
    replies = tmp_path / "r.jsonl"
    replies.write_text("\n".join(json.dumps(r) for r in [
        {"content": "seed one", "seeds": [1]}, {"content": "seed two", "seeds": [2]}, {"content": "all"}]))
    for seed, first in ((1, "seed one"), (2, "seed two"), (0, "all")):
        actor = make_actor(ActorConfig(model=f"scripted/{replies}", seed=seed))
        assert isinstance(actor.model, ScriptedModel) and actor.model.seed == seed
        assert actor.model.replies[0].text == first


BASELINE_SCRIPT = """WIDTH = 2
RATE = 0.1
DEPTH = 3
print(f"validation total {10 - abs(WIDTH - 8) + DEPTH - RATE}")
"""


def test_two_seeds_give_different_baseline_choices(tmp_path):
    task = write_task(tmp_path / "toy", files={"env/train.py": BASELINE_SCRIPT}, toml=(
        'metric = "total"\ndirection = "higher"\nbaseline = 4.0\nsolve = ["train.py"]\n'))
    first_trials = {}
    for seed in (0, 4):
        config = ActorConfig(kind="baseline", seed=seed)
        actor = make_actor(config)
        assert actor.seed == seed
        run, spec = create_run(task, actor, tmp_path / f"runs{seed}", config=config, sandbox="local",
                               budgets=Budgets(max_steps=6))
        drive(run, spec, actor)
        trials = [s.meta["trial"] for s in RunDir.open(run.path).steps() if s.action == "Write File"]
        first_trials[seed] = next(iter(trials[0]))
        assert RunDir.open(run.path).meta.seed == seed
    assert first_trials == {0: "WIDTH", 4: "DEPTH"}


def test_observation_cap_is_read_from_the_stored_config(tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("Execute Script", {"script_name": "big.py"}),
                                               react("Final Answer", {"final_answer": "x"})])
    (Path(tiny_task) / "env" / "big.py").write_text("print('y' * 5000)\n")
    config = resolve(ActorConfig(model=model, observation_cap=500))
    actor = make_actor(config)
    run, spec = create_run(tiny_task, actor, tmp_path / "runs", config=config, sandbox="local")
    drive(run, spec, actor)
    step = RunDir.open(run.path).steps()[0]
    assert step.truncated and len(step.observation) < 1000 and "y" * 4000 in (step.observation_full or "")


def test_the_seed_reaches_the_tasks_commands(tiny_task, tmp_path):
    from agent.actor import Proposal
    from agent.replay import ReplayActor

    script = "import os\nprint('seed is', os.environ['LABCOAT_SEED'])\n"
    actor = ReplayActor([Proposal(action="Write File", args={"file_name": "s.py", "content": script}),
                         Proposal(action="Execute Script", args={"script_name": "s.py"}),
                         Proposal(action="Final Answer", args={"final_answer": "x"})])
    run, spec = create_run(tiny_task, actor, tmp_path / "runs", config=ActorConfig(kind="replay", seed=11),
                           sandbox="local")
    drive(run, spec, actor)
    assert "seed is 11" in RunDir.open(run.path).steps()[1].observation


def test_a_run_without_method_tools_is_offered_none_even_when_resumed(tmp_path):
    from agent.actor import Proposal
    from agent.replay import ReplayActor

    task = write_task(tmp_path / "tooly", toml='metric = "total"\ndirection = "higher"\nbaseline = 1.0\n'
                      'tools = ["online_lp_regret"]\n')
    config, _ = build({"method_tools": False}, ActorConfig(kind="replay"))
    assert config.method_tools is False
    actor = ReplayActor([Proposal(action="online_lp_regret", args={}),
                         Proposal(action="Final Answer", args={"final_answer": "x"})])
    run, spec = create_run(task, actor, tmp_path / "runs", config=config, sandbox="local")
    assert spec.tools == ["online_lp_regret"]  # the task offers it; the config withholds it
    drive(run, spec, actor)
    first = RunDir.open(run.path).steps()[0]
    assert first.error and "Invalid action 'online_lp_regret'" in first.observation, first.observation
    again = RunDir.open(run.path)  # what a resume reads back
    assert ActorConfig.from_meta(again.meta).method_tools is False and again.task().tools


def test_a_boolean_option_can_be_turned_off_on_the_command_line():
    tools = next(o for o in OPTIONS if o.name == "method_tools")
    assert tools.flags == ("--method-tools/--no-method-tools",) and tools.default is True
