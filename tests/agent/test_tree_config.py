"""``--agent tree`` through the typed run configuration: the factory builds the tree agent with
its settings, the CLI's flags and run.json carry them (and a resume restores them), bad values
are named by their flag, the local model gets room for a whole script, and a batch runs every
combination as a tree search with its own seed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agent.batch import BatchSpec, load_manifest, run_batch
from agent.config import ActorConfig, OptionError, build, options
from agent.context import ContextSettings
from agent.factory import TREE_MAX_TOKENS, AgentConfigError, make_actor, resolve
from agent.runner import Budgets, create_run, drive
from agent.tree.agent import TreeAgent
from agent.tree.policy import PolicySettings
from agent.tree.settings import TreeSettings
from environments.record.runs import RunDir
from tests.agent.helpers import write_replies
from tests.agent.test_llamacpp import needs_qwen
from tests.agent.test_tree_agent import VALIDATED_EVAL, VALIDATED_TOML
from tests.agent.test_tree_agent import writes as writes_and_prints
from tests.conftest import write_task
from tui.cli import app


def reply(plan: str, code: str) -> str:
    return f"{plan}\n\n```python\n{code.rstrip()}\n```"


def writes(value: int) -> str:
    return f"open('result.txt', 'w').write('{value}')\nprint('validation total {value}')\n"


def test_make_actor_builds_the_tree_agent_with_the_configs_settings(tmp_path):
    model = write_replies(tmp_path / "r.txt", [reply("x", writes(1))])
    config = ActorConfig(kind="tree", model=model, seed=4,
                         tree=TreeSettings(policy=PolicySettings(num_drafts=2, debug_prob=0.25,
                                                                 max_debug_depth=1),
                                           skip_validation=True),
                         context=ContextSettings(format_retries=5))
    actor = make_actor(config)
    assert isinstance(actor, TreeAgent)
    assert actor.settings == config.tree and actor.format_retries == 5
    assert actor.model.seed == 4  # the run's seed reaches the model, as for the research agent
    # no model named: the same default choice as the research agent (offline: none to use)
    assert resolve(ActorConfig(kind="tree", model=model)).kind == "tree"
    with pytest.raises(AgentConfigError, match="no-LLM agent; use it without --agent tree"):
        make_actor(ActorConfig(kind="tree", model="baseline/hparam"))


@needs_qwen  # the factory builds the model: the extra and the model packages must be there
def test_the_local_model_gets_room_for_a_whole_script():
    actor = make_actor(ActorConfig(kind="tree", model="llamacpp/qwen2.5-coder-0.5b", seed=1))
    assert actor.model.max_tokens == TREE_MAX_TOKENS >= 1400
    # what the person wrote wins
    own = make_actor(ActorConfig(kind="tree", model="llamacpp/qwen2.5-coder-0.5b?max_tokens=900"))
    assert own.model.max_tokens == 900
    # the research agent's steps keep the model's own default
    research = make_actor(ActorConfig(kind="research", model="llamacpp/qwen2.5-coder-0.5b"))
    assert research.model.max_tokens < TREE_MAX_TOKENS


def test_tree_options_are_flags_grouped_apart_and_bad_values_name_their_flag():
    tree = {o.name: o for o in options() if o.group == "tree"}
    assert set(tree) == {"num_drafts", "debug_prob", "max_debug_depth", "skip_validation",
                         "select_top_k"}
    assert tree["num_drafts"].flags == ("--num-drafts",) and tree["num_drafts"].default == 5
    assert tree["select_top_k"].flags == ("--select-top-k",) and tree["select_top_k"].default == 3
    config, _ = build({"kind": "tree", "num_drafts": "2", "debug_prob": "0", "skip_validation": "true"})
    assert (config.tree.policy.num_drafts, config.tree.policy.debug_prob, config.tree.skip_validation) \
        == (2, 0.0, True)
    with pytest.raises(OptionError, match=r"--debug-prob: .*less than or equal to 1"):
        build({"debug_prob": "2"})
    with pytest.raises(OptionError, match=r"--num-drafts: .*greater than or equal to 1"):
        build({"num_drafts": "0"})
    with pytest.raises(ValueError, match="extra"):
        TreeSettings.model_validate({"policy": {"num_draft": 2}})  # a misspelt knob is an error


def test_labcoat_run_agent_tree_records_the_tree_and_resumes_its_config(tiny_task, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = write_replies(tmp_path / "r.txt", [reply("first", writes(50)), reply("second", writes(70))])
    res = CliRunner().invoke(app, [
        "run", str(tiny_task), "--agent", "tree", "--model", model, "--num-drafts", "2",
        "--debug-prob", "0", "--skip-validation", "--sandbox", "local", "--runs-dir", str(tmp_path / "runs"),
        "--max-steps", "7", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "finished", out["status_reason"]
    assert out["agent"] == "tree" and "-tree-" in out["run_id"] and out["actor"] == "agent"
    assert out["config"]["tree"]["policy"]["num_drafts"] == 2 and out["config"]["tree"]["skip_validation"]
    run = RunDir.open(out["run_dir"])
    nodes = [(s.meta["tree"]["node"], s.meta["tree"]["op"]) for s in run.steps()
             if s.action == "Write File"]
    assert nodes == [(1, "draft"), (2, "draft")]  # node 2 (70) is the best and already in place
    assert out["score"]["value"] == 70.0
    again = ActorConfig.from_meta(run.meta)
    assert again.kind == "tree" and again.tree.policy.num_drafts == 2
    assert again.tree.policy.debug_prob == 0.0
    assert isinstance(make_actor(again), TreeAgent)


def test_a_batch_in_tree_mode(tiny_task, tmp_path):
    replies = tmp_path / "tree.jsonl"
    # the scripted model answers by seed: seed 0 writes 6 then 60, seed 1 writes 50 then 5
    lines = [{"content": reply(f"seed {seed} try {i}", writes(v)), "seeds": [seed]}
             for seed, values in ((0, (6, 60)), (1, (50, 5))) for i, v in enumerate(values)]
    replies.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    spec = BatchSpec(tasks=[str(tiny_task)], models=[f"scripted/{replies}"], seeds=[0, 1],
                     sandbox="local", budgets=Budgets(max_steps=7),
                     actor=ActorConfig(kind="tree", tree=TreeSettings(
                         policy=PolicySettings(num_drafts=2, debug_prob=0.0))))
    result = run_batch(tmp_path / "batch", spec)
    assert (result.done, result.failed) == (2, 0), result.results
    best = {}
    for c in load_manifest(tmp_path / "batch").combos.values():
        run = RunDir.open(c.run_dir)
        config = ActorConfig.from_meta(run.meta)
        assert (config.kind, config.seed, config.tree.policy.num_drafts) == ("tree", c.seed, 2)
        assert all("tree" in s.meta for s in run.steps())
        best[c.seed] = (run.path / "workspace" / "result.txt").read_text()
        assert json.loads((run.path / "score.json").read_text())["value"] == float(best[c.seed])
    assert best == {0: "60", 1: "50"}  # seed 1's best is its first node, restored at the end


def test_skip_validation_reads_the_printed_metric_and_leaves_the_checks_unspent(tmp_path):
    task = write_task(tmp_path / "val", toml=VALIDATED_TOML, eval_body=VALIDATED_EVAL)
    model = write_replies(tmp_path / "r.txt", [reply("one", writes_and_prints(10, 99))])
    config = ActorConfig(kind="tree", model=model, tree=TreeSettings(
        policy=PolicySettings(num_drafts=1), skip_validation=True))
    actor = make_actor(config)
    run, spec = create_run(task, actor, tmp_path / "runs", config=config, sandbox="local",
                           budgets=Budgets(max_steps=5))
    meta = drive(run, spec, actor)
    assert meta.status == "finished", meta.status_reason
    node = actor.journal.get(1)
    assert (node.metric, node.metric_source) == (99.0, "output")  # the print, not the file's 10
    assert "Validate Submission" not in [s.action for s in run.steps()]
