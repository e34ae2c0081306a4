"""The prompt builder (agent/context.py, agent/prompts.py): terse, but nothing the agent needs lost."""

from __future__ import annotations

import re

import pytest

from agent import prompts
from agent.context import AgentStep, ContextSettings, build_messages, older_line
from agent.llm_actions import LLMActions
from agent.parsing import FIELDS, parse_response
from agent.tools_mode import tool_name, tool_schemas
from environments.low_level import LOW_LEVEL_ACTIONS
from environments.tool_actions import tool_action
from methods.registry import all_tools

BUILT_IN = [*LOW_LEVEL_ACTIONS, *LLMActions(None, None).specs()]


def _method_tools():
    tools = all_tools()
    return [tool_action(t.name, t) for t in (tools.values() if isinstance(tools, dict) else tools)]


def _system(specs, mode: str = "react") -> str:
    messages = build_messages("Improve train.py.", prompts.describe_actions(specs), [], "", "unlimited",
                              ContextSettings(), mode)
    return messages[0]["content"]


def _action_line(system: str, name: str) -> str:
    return next(line for line in system.splitlines() if line.startswith(f"- {name} {{"))


@pytest.mark.parametrize("specs", [BUILT_IN, [*BUILT_IN, *_method_tools()[:4]]], ids=["built-in", "with-tools"])
def test_every_action_its_keys_and_their_meaning_are_in_the_system_message(specs):
    system = _system(specs)
    glossary = prompts._glossary(specs)
    arguments = next(line for line in system.splitlines() if line.startswith("Arguments: "))
    for spec in specs:
        line = _action_line(system, spec.name)
        assert prompts._purpose(spec.description) in line
        keys = prompts._signature(spec)
        assert f"- {spec.name} {keys}: " in line
        for name, f in spec.args_model.model_fields.items():
            shown = name if f.is_required() else f"{name}={f.get_default(call_default_factory=True)!r}"
            assert re.search(rf"[{{ ]{re.escape(shown)}[,}}]", keys), (spec.name, name)
            meaning = prompts.brief(f.description or name)
            if meaning in (name, ""):  # the name and the action say it (paths: the list's head)
                continue
            if glossary[name] == meaning:  # explained once, next to every argument it explains
                entry = rf"(?:^Arguments: |; )[\w, ]*\b{name}\b[\w, ]*: {re.escape(meaning)}"
                assert re.search(entry, arguments), (spec.name, name)
            else:  # explained on the action's own line
                assert f"{name}: {prompts._variant(meaning, glossary[name])}" in line, (spec.name, name)


def test_every_built_in_description_has_its_brief():
    """A reworded ActionSpec shows in full (never a stale brief) and fails here until briefed."""
    texts = [s.description for s in BUILT_IN]
    texts += [f.description for s in BUILT_IN for f in s.args_model.model_fields.values()]
    missing = [t for t in texts if t not in prompts.BRIEF]
    assert not missing, f"add a brief to agent/prompts.py BRIEF for: {missing}"
    assert sum(len(prompts.BRIEF[t]) for t in texts) < 0.6 * sum(len(t) for t in texts)


def test_the_response_format_is_the_one_the_parser_reads():
    system = _system(BUILT_IN)
    for name in FIELDS:
        assert re.search(rf"^{re.escape(name)}: ", system, re.MULTILINE), name
    reply = "\n".join(f"{name}: x" for name in FIELDS if not name.startswith("Action"))
    parsed = parse_response(reply + '\nAction: List Files\nAction Input: {"dir_path": "."}')
    assert parsed.action == "List Files" and parsed.action_input == {"dir_path": "."}
    assert set(parsed.fields) >= set(FIELDS)


def test_tools_mode_leaves_the_action_list_to_the_native_schemas():
    system = _system(BUILT_IN, mode="tools")
    assert "- Inspect Script Lines {" not in system and prompts.NATIVE_TOOLS in system
    assert "Research Plan and Status: the full high level plan" in system
    schemas = {s["name"]: s for s in tool_schemas(BUILT_IN)}
    for spec in BUILT_IN:
        schema = schemas[tool_name(spec.name)]
        assert schema["description"] == spec.description
        assert set(schema["parameters"]["properties"]) == set(spec.args_model.model_fields)


def _step(i: int, obs: str, summary: str | None = None, action: str = "Execute Script") -> AgentStep:
    return AgentStep(i, action, {"script_name": "train.py"}, obs, thought=f"thought {i}", summary=summary)


def _prompt(steps: list[AgentStep], settings: ContextSettings | None = None) -> str:
    return build_messages("p", "tools", steps, "1. plan", "unlimited", settings or ContextSettings())[1]["content"]


def test_the_latest_observation_is_whole_up_to_the_threshold_earlier_ones_summarised():
    s = ContextSettings()
    earlier = "E" * (s.summarize_over + 10)
    latest = "\n".join(f"{'abcdefg'[i % 7]}: validation accuracy 0.{i:04d}" for i in range(300))[: s.latest_whole]
    assert len(latest) > s.summarize_over
    prompt = _prompt([_step(1, earlier, "earlier in short"), _step(2, latest, "latest in short")])
    assert latest in prompt and "latest in short" not in prompt
    assert earlier not in prompt and "(summarised) earlier in short" in prompt
    too_long = latest + "x" * 10
    prompt = _prompt([_step(1, too_long, "latest in short")])
    assert too_long not in prompt and "(summarised) latest in short" in prompt


def test_a_programs_repeated_output_lines_are_folded_file_contents_never():
    s = ContextSettings()
    log = "\n".join(f"epoch {i}/300: loss 0.{i:04d}" for i in range(1, 301))
    assert len(log) > s.latest_whole
    prompt = _prompt([_step(1, log, "in short")])
    assert '[300 lines of the form "epoch {1..300}/300: loss {}"' in prompt and "in short" not in prompt
    assert "\n0.0300\n```" in prompt  # the last line's number, whole
    prompt = _prompt([_step(1, log[:1400], action="Read File")])
    assert log[:1400] in prompt
    prompt = _prompt([_step(1, log, "in short")], ContextSettings(fold_repeats=0))
    assert "(summarised) in short" in prompt


def test_older_steps_are_one_line_each_and_recent_steps_are_not_repeated_there():
    steps = [_step(i, f"ran {i}") for i in range(1, 8)]
    prompt = _prompt(steps, ContextSettings(keep_last=3, collapse_every=1))
    for i in range(1, 5):
        assert f"\n{i}. Execute Script(train.py) -> ran {i}\n" in prompt + "\n"
    for i in range(5, 8):
        assert f"[Step {i}] Thought: thought {i}" in prompt and f"\n{i}. Execute Script" not in prompt
    assert prompt.count("1. plan") == 1


def test_an_older_line_keeps_a_runs_final_numbers_whole():
    log = "The script has been executed. Here is the output:\n" + "\n".join(
        f"epoch {e}/41: loss 0.{e:04d}, validation accuracy 0.6{e:03d}" for e in range(1, 42))
    line = older_line(_step(4, log), 100)
    assert line == "4. Execute Script(train.py) -> epoch 41/41: loss 0.0041, validation accuracy 0.6041"
    summary = "The run reached validation accuracy 0.6041 after 41 epochs."
    step = AgentStep(5, "Understand File", {"file_name": "log.txt", "things_to_look_for": "the best epoch"},
                     "epoch 1 ...\n" * 300, summary=summary)
    assert older_line(step, 100).endswith(f"-> {summary}")  # no rule for it: the summary's gist


def test_the_benchmark_measures_the_agents_own_defaults():
    from agent.research import ResearchAgent
    from tests.benchmarks import bench_prompt_tokens as bench

    assert bench.KEEP == ContextSettings().keep_last
    agent = ResearchAgent(None, None, None)
    assert agent.settings == ContextSettings()
    trace = bench.make_trace()
    problem = bench.PROBLEM.read_text()
    ours = sum(bench.tokens(bench.labcoat_prompt(trace, n, problem, ContextSettings())) for n in range(len(trace)))
    theirs = sum(bench.tokens(bench.mlab_prompt(trace, n, problem)) for n in range(len(trace)))
    assert ours / theirs < 0.5  # issue 4's goal (0.616 at first, 0.549 before the gists and folding)


def _with_plan(i: int, plan: str) -> AgentStep:
    step = _step(i, f"ran {i}")
    step.fields = {"Research Plan and Status": plan}
    return step


def test_each_prompt_opens_with_the_last_one_between_collapses():
    """Budget and plan come last and whole steps collapse three at a time, so a provider's
    prefix cache serves the previous prompt; 2 to 4 steps are whole (3 on average)."""
    plans = [f"1. baseline\n" + "".join(f"{k}. step {k} done\n" for k in range(2, i + 2)) for i in range(1, 13)]
    steps = [_with_plan(i, plans[i - 1]) for i in range(1, 13)]
    prompts_ = []
    for n in range(1, 13):
        messages = build_messages("p", "tools", steps[:n], plans[n - 1], f"{50 - n} of 50 steps", ContextSettings())
        prompts_.append(messages[1]["content"])
    whole = [p.count("[Step ") for p in prompts_]
    assert all(2 <= w <= 4 for w in whole[2:]) and sum(whole[2:]) / len(whole[2:]) == pytest.approx(3, abs=0.3)
    kept = 0
    for before, after, w in zip(prompts_, prompts_[1:], whole[1:], strict=False):
        stable = before[:before.rindex("[Step ")]  # everything up to the latest whole step
        kept += after.startswith(stable)
    assert kept >= 2 * len(prompts_[1:]) // 3 - 1  # all but the collapsing steps
    last = prompts_[-1]
    assert last.rstrip().endswith(prompts.ASK_REACT) and "Budget left: 38 of 50 steps" in last
    assert "after step " in last and "12. step 12 done" in last  # the plan: at the boundary, then its change
    assert last.count("2. step 2 done") == 1  # not repeated


def test_a_rewritten_plan_is_told_by_its_changed_lines():
    from agent.context import plan_change

    base = "1. read data (done)\n2. baseline (in progress)\n3. tune the learning rate\n4. add features\n5. submit"
    assert plan_change(base, base, 4) == prompts.PLAN_SAME.format(index=4)
    assert plan_change(base, base + "\n4. submit", 4).endswith("then:\n4. submit")
    changed = plan_change(base, base.replace("(in progress)", "(done: 0.71)"), 4)
    assert changed.endswith("- 2. baseline (in progress)\n+ 2. baseline (done: 0.71)")
    rewritten = "A. new plan\nB. all of it"
    assert plan_change(base, rewritten, 4) == prompts.PLAN_REWRITTEN.format(index=4, plan=rewritten)
