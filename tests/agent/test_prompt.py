"""The prompt builder (agent/context.py, agent/prompts.py): terse, but nothing the agent needs lost."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import pytest

from agent import prompts
from agent.context import AgentStep, ContextSettings, build_messages, older_line
from agent.llm_actions import LLMActions
from agent.models.react_format import FIELDS, parse_response
from agent.tools_mode import tool_name, tool_schemas
from environments.acting.actions import brief_of, is_long
from environments.acting.low_level import LOW_LEVEL_ACTIONS
from environments.acting.tool_actions import tool_action
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
        assert prompts._purpose(spec) in line
        keys = prompts._signature(spec)
        assert f"- {spec.name} {keys}: " in line
        for name, f in spec.args_model.model_fields.items():
            shown = name if f.is_required() else f"{name}={f.get_default(call_default_factory=True)!r}"
            assert re.search(rf"[{{ ]{re.escape(shown)}[,}}]", keys), (spec.name, name)
            meaning = prompts.field_text(name, f)
            if meaning in (name, ""):  # the name and the action say it (paths: the list's head)
                continue
            if glossary[name] == meaning:  # explained once, next to every argument it explains
                entry = rf"(?:^Arguments: |; )[\w, ]*\b{name}\b[\w, ]*: {re.escape(meaning)}"
                assert re.search(entry, arguments), (spec.name, name)
            else:  # explained on the action's own line
                assert f"{name}: {prompts._variant(meaning, glossary[name])}" in line, (spec.name, name)


def test_every_built_in_action_and_argument_carries_its_brief():
    """The brief lives on the action and its argument model, next to the description it
    shortens; the prompt shows it, the schema sent to providers does not."""
    missing = [s.name for s in BUILT_IN if s.brief is None]
    missing += [f"{s.name}.{n}" for s in BUILT_IN for n, f in s.args_model.model_fields.items() if brief_of(f) is None]
    assert not missing, f"add a brief (ActionSpec.brief, Annotated[..., Brief(...)]) to: {missing}"
    briefs = [s.brief for s in BUILT_IN] + [brief_of(f) for s in BUILT_IN for f in s.args_model.model_fields.values()]
    texts = [s.description for s in BUILT_IN] + [f.description for s in BUILT_IN for f in s.args_model.model_fields.values()]
    assert sum(map(len, briefs)) < 0.6 * sum(map(len, texts))
    system = _system(BUILT_IN)
    assert "- Inspect Script Lines {script_name, start_line_number, end_line_number}: show a script's lines" in system
    assert "start_line_number, end_line_number: a line number (the first is 1)" in system
    for spec in BUILT_IN:
        assert "Brief" not in json.dumps(spec.json_schema()) and spec.brief not in json.dumps(spec.json_schema())


def test_free_text_arguments_are_marked_on_their_models():
    """The form's text areas come from the models (environments.acting.actions.LONG), not a list of names."""
    longs = {(s.name, n) for s in BUILT_IN for n, f in s.args_model.model_fields.items() if is_long(f)}
    assert {("Write File", "content"), ("Final Answer", "final_answer"), ("Edit Script (AI)", "edit_instruction"),
            ("Understand File", "things_to_look_for")} <= longs
    assert ("Write File", "file_name") not in longs
    assert all(s.args_model.model_fields[n].annotation is str for s in BUILT_IN for a, n in longs if a == s.name)


def test_an_action_without_briefs_shows_its_descriptions():
    from pydantic import Field

    from environments.acting.actions import ActionArgs, ActionSpec

    class Args(ActionArgs):
        seed: int = Field(0, description="the random seed of the run")

    spec = ActionSpec("Sample", "Use this to draw samples.", Args, lambda env, a: None, "tool")
    line = prompts.describe_action(spec)
    assert line == "- Sample {seed=0}: draw samples. (seed: the random seed of the run)"


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
    assert len(latest) > s.summarize_over and len(earlier) + len(latest) > s.whole_chars
    prompt = _prompt([_step(1, earlier, "earlier in short"), _step(2, latest, "latest in short")])
    assert latest in prompt and "latest in short" not in prompt
    assert earlier not in prompt and "Step 1: Execute Script(train.py) -> earlier in short\n" in prompt
    kept = _prompt([_step(1, "ran"), _step(2, earlier, "earlier in short"), _step(3, latest, "latest in short")],
                   ContextSettings(keep_last=2, collapse_every=1))  # step 2 kept whole through the collapse
    assert earlier not in kept and "(summarised) earlier in short" in kept and latest in kept
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
        assert f"Step {i}: Execute Script(train.py) -> ran {i}\n" in prompt + "\n"
    for i in range(5, 8):  # whole: the line's opening, then the step; its gist is not written twice
        assert f"Step {i}: Execute Script\nThought: thought {i}" in prompt and f"-> ran {i}" not in prompt
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

    assert "ContextSettings(summarize_over=args.summarize_over)" in Path(bench.__file__).read_text()
    agent = ResearchAgent(None, None, None)
    assert agent.settings == ContextSettings()
    trace = bench.make_trace()
    problem = bench.PROBLEM.read_text()
    ours = sum(bench.tokens(bench.labcoat_prompt(trace, n, problem, ContextSettings())) for n in range(len(trace)))
    theirs = sum(bench.tokens(bench.mlab_prompt(trace, n, problem)) for n in range(len(trace)))
    assert ours / theirs < 0.5  # issue 4's goal (0.616 at first, 0.549 before the gists and folding)
    from tests.benchmarks.bench_prompt_cache import reuse, share_of

    prompts_ = [bench.labcoat_prompt(trace, n, problem, ContextSettings()) for n in range(len(trace))]
    assert share_of(reuse(prompts_)) >= 0.8  # issue 17's prefix goal, on the same trace (0.781 before)


def test_the_prompt_ends_with_the_request_in_both_modes():
    """A small model needs the request last (without it the 0.5B model edits before looking)."""
    steps = [_step(1, "ran 1")]
    react = build_messages("p", "tools", steps, "1. plan", "unlimited", ContextSettings())[1]["content"]
    tools = build_messages("p", "tools", steps, "1. plan", "unlimited", ContextSettings(), "tools")[1]["content"]
    assert react.endswith("Budget left: unlimited\n" + prompts.ASK_REACT)
    assert tools.endswith("Budget left: unlimited\n" + prompts.ASK_TOOLS)


def _with_plan(i: int, plan: str) -> AgentStep:
    step = _step(i, f"ran {i}")
    step.fields = {"Research Plan and Status": plan}
    return step


def _prompts(steps: list[AgentStep], plans: list[str], settings: ContextSettings | None = None) -> list[str]:
    return [build_messages("p", "tools", steps[:n], plans[n - 1], f"{50 - n} of 50 steps",
                           settings or ContextSettings())[1]["content"] for n in range(1, len(steps) + 1)]


def _tail(prompt: str) -> int:
    """Where a prompt's changing tail starts: the plan, when the history does not end with it, or
    the budget."""
    marks = [prompt.rfind(m) for m in ("\nYour latest Research Plan", "\nBudget left:")]
    return min(m for m in marks if m >= 0)


def _opens_with_the_last(before: str, after: str) -> bool:
    """Everything ``before`` held up to its changing tail (its plan's change and budget) opens ``after``."""
    return after.startswith(before[:_tail(before)])


def _growing_plans(n: int) -> list[str]:
    return ["1. baseline\n" + "".join(f"{k}. step {k} done\n" for k in range(2, i + 2)) for i in range(1, n + 1)]


def test_each_prompt_opens_with_the_last_one_between_rare_collapses():
    """The budget comes last and whole steps stay as they were written until they collapse in one
    block, so a provider's prefix cache serves the whole previous prompt but its tail."""
    plans = _growing_plans(12)
    steps = [_with_plan(i, plans[i - 1]) for i in range(1, 13)]
    prompts_ = _prompts(steps, plans)
    s = ContextSettings()
    whole = [p.count("\nThought: ") for p in prompts_]
    most = s.keep_last + s.collapse_every - 1
    assert whole[:most] == list(range(1, most + 1)) and whole[most] == s.keep_last  # one collapse, at once
    kept = [_opens_with_the_last(a, b) for a, b in pairwise(prompts_)]
    assert kept.count(False) == 1 and not kept[most - 1]
    last = prompts_[-1]
    assert last.endswith("\n\nBudget left: 38 of 50 steps\n" + prompts.ASK_REACT)  # the budget, the request
    assert "Your latest Research Plan" not in last  # the history ends with the latest plan: not restated
    assert "Step 1: Execute Script(train.py) -> ran 1\nPlan:\n1. baseline\n" in last  # whole once, then changes
    assert "Step 12: Execute Script\nPlan adds:\n13. step 13 done\nThought:" in last
    for line in plans[-1].splitlines():
        assert last.count(f"\n{line}\n") == 1, line  # each line of the plan told once


def _rebuilt_plan(prompt: str) -> str:
    """The latest plan read back from a prompt's history: the first told whole, each later one
    told as what it adds (the form these plans' changes take)."""
    plan = ""
    for m in re.finditer(r"\nPlan( adds)?:\n((?:\d+\. [^\n]*\n)+)", prompt):
        plan = plan + m.group(2) if m.group(1) else m.group(2)
    return plan


def _first_whole(prompt: str) -> int:
    """Where the first whole step's entry starts (the line of the step before its first Thought)."""
    return prompt.rindex("Step ", 0, prompt.index("\nThought: "))


def test_a_collapse_keeps_the_history_before_it_and_the_opening_of_its_first_step():
    """Every step's entry opens with its line's start and its plan's change, and a collapsed step
    is that with its observation's gist: every prompt opens with all the collapsed steps of the
    one before, at a collapse also the opening of the first step it collapses, and the latest
    plan is there, each of its lines written once."""
    plans = _growing_plans(30)
    steps = [_with_plan(i, plans[i - 1]) for i in range(1, 31)]
    s = ContextSettings(collapse_every=3)
    prompts_ = _prompts(steps, plans, s)
    collapses = 0
    for n, (before, after) in enumerate(pairwise(prompts_), 1):
        start = _first_whole(before)
        assert after.startswith(before[:start]), n  # the collapsed steps before stay as written
        if not _opens_with_the_last(before, after):
            collapses += 1
            opening = before[start:before.index("\n", start)]  # "Step k: Execute Script"
            assert after.startswith(before[:start] + opening + "(train.py) -> "), n  # its step's opening kept
        assert _rebuilt_plan(after) == plans[n], n
    assert collapses >= 8  # collapses happened (every three steps), and each kept what came before
    last = prompts_[-1]
    assert "Step 1: Execute Script(train.py) -> ran 1\n" in last
    assert "Step 30: Execute Script\nPlan adds:\n31. step 31 done\nThought" in last
    for line in plans[-1].splitlines():
        assert last.count(f"\n{line}\n") == 1, line


def test_a_plan_the_history_does_not_hold_is_told_in_the_tail():
    steps = [_step(1, "ran 1"), _step(2, "ran 2")]  # responses without a plan
    prompt = _prompt(steps)
    assert prompt.endswith("Your latest Research Plan and Status:\n1. plan\n\nBudget left: unlimited\n"
                           + prompts.ASK_REACT)
    planned = _with_plan(1, "1. plan")
    prompt = build_messages("p", "tools", [planned], "1. plan\n2. more", "unlimited", ContextSettings())[1]["content"]
    assert "Step 1: Execute Script\nPlan:\n1. plan\nThought:" in prompt
    assert "Your latest Research Plan and Status adds:\n2. more\n\nBudget left" in prompt
    first = build_messages("p", "tools", [], "", "unlimited", ContextSettings())[1]["content"]
    assert prompts.NO_PLAN in first


def test_cache_points_mark_each_steps_entry():
    from agent.context import CACHE_POINTS

    plans = _growing_plans(12)
    steps = [_with_plan(i, plans[i - 1]) for i in range(1, 13)]
    s = ContextSettings(collapse_every=3)
    messages = [build_messages("p", "tools", steps[:n], plans[n - 1], "unlimited", s)[1] for n in (11, 12)]
    for m, n in zip(messages, (11, 12), strict=True):
        text, points = m["content"], m[CACHE_POINTS]
        assert points == sorted(points) and all(0 < p < len(text) for p in points)
        assert [text[p:text.index(":", p)] for p in points] == [f"Step {k}" for k in range(1, n + 1)]  # each step
    before, after = (m["content"] for m in messages)
    shared = len(before[:_tail(before)])
    assert after.startswith(before[:shared]) and [p for p in messages[0][CACHE_POINTS] if p < shared] == \
        [p for p in messages[1][CACHE_POINTS] if p < shared]  # the same boundaries: the cache is found


def test_long_observations_collapse_the_history_sooner_and_it_stays_within_its_budget():
    s = ContextSettings()
    logs = [f"output {i}\n" + "\n".join(f"{'abcdefg'[k % 7]}{i}: acc 0.{k:04d}" for k in range(90))
            for i in range(1, 16)]  # ~1.2 kB each
    steps = [AgentStep(i, "Read File", {"file_name": f"log{i}.txt"}, logs[i - 1], thought=f"t{i}")
             for i in range(1, 16)]
    prompts_ = _prompts(steps, ["1. plan"] * 15)
    for n, p in enumerate(prompts_, 1):
        shown = [x for x in logs[:n] if x in p]
        assert logs[n - 1] in p  # the latest, whole
        assert sum(map(len, shown)) <= s.whole_chars + len(logs[n - 1])
    kept = [_opens_with_the_last(a, b) for a, b in pairwise(prompts_)]
    assert 2 <= kept.count(False) <= len(kept) // 2  # collapses: by size, not every step, nor never


def test_a_rewritten_plan_is_told_by_its_changed_lines():
    from agent.context import plan_change

    base = "1. read data (done)\n2. baseline (in progress)\n3. tune the learning rate\n4. add features\n5. submit"
    head = "Plan after step 4"
    assert plan_change(base, base, head) == prompts.PLAN_SAME.format(head=head)
    assert plan_change(base, base + "\n4. submit", head) == f"{head} adds:\n4. submit"
    changed = plan_change(base, base.replace("(in progress)", "(done: 0.71)"), head)
    assert changed == f"{head} changes lines:\n- 2. baseline (in progress)\n+ 2. baseline (done: 0.71)"
    rewritten = "A. new plan\nB. all of it"
    assert plan_change(base, rewritten, head) == prompts.PLAN_REWRITTEN.format(head=head, plan=rewritten)
    assert plan_change(base, rewritten).startswith(prompts.LATEST_HEAD)


def test_a_plan_changed_in_the_middle_is_told_by_its_lines_in_the_step_and_the_older_block():
    rest = "\n2. tune the learning rate and the batch size\n3. add features from the raw columns"
    plans = [f"1. baseline (in progress){rest}", f"1. baseline (done: 0.71){rest}", f"1. baseline (done: 0.71){rest}\n3. submit"]
    steps = [_with_plan(i, plans[i - 1]) for i in range(1, 4)]
    whole = _prompts(steps, plans)[-1]
    change = "Plan changes lines:\n- 1. baseline (in progress)\n+ 1. baseline (done: 0.71)\n"
    assert f"Step 2: Execute Script\n{change}Thought:" in whole
    collapsed = _prompts(steps, plans, ContextSettings(collapse_every=1))[-1]
    assert f"Step 2: Execute Script(train.py) -> ran 2\n{change}Step 3: " in collapsed
    assert "Step 3: Execute Script\nPlan adds:\n3. submit\nThought:" in collapsed


def test_plans_rewritten_every_step_collapse_the_history_sooner_and_spent_ones_leave_it():
    """A model that rewrites its whole plan each step: each version is told whole, so the whole
    steps' plans count towards ``whole_chars`` and an older block after a rewrite drops the
    spent plans before it; the prompt stays bounded and holds the latest plan whole."""
    plans = [f"Plan version {i}: " + " ".join(f"goal{i}-{k}" for k in range(60)) for i in range(1, 31)]
    steps = [_with_plan(i, plans[i - 1]) for i in range(1, 31)]
    prompts_ = _prompts(steps, plans)
    s = ContextSettings()
    for n, p in enumerate(prompts_, 1):
        history, recent = p[:_first_whole(p)], p[_first_whole(p):]
        whole = sum(len(x) for x in plans[:n] if f"\nPlan, rewritten:\n{x}\n" in recent or f"\nPlan:\n{x}\n" in recent)
        assert whole <= s.whole_chars + len(plans[n - 1]) + 100, n  # whole steps' plans within the bound
        assert plans[n - 1] in p, n  # the latest, whole
        assert sum(x in history for x in plans[:n]) <= 1, n  # the collapsed steps: no pile of spent plans
    last = prompts_[-1]
    assert "Step 1: Execute Script(train.py) -> ran 1\n" in last
    assert last[:_first_whole(last)].count("Plan, rewritten:") == 1  # the last rewrite's; those before dropped


@pytest.mark.parametrize("said", ["", "The observation is too long to keep in full.", "ok, done",
                                  "Summarize the observation objectively: it is long. Too long to keep in full."])
def test_a_summary_that_says_nothing_gives_way_to_the_observations_head_and_tail(said):
    from agent.context import checked_summary

    log = "start of the run\n" + "\n".join(f"noise line {i}" for i in range(400)) + "\nvalidation accuracy 0.91"
    shown = checked_summary(said, log, ContextSettings())
    assert shown.startswith("[the summary said nothing") and "start of the run" in shown
    assert shown.endswith("validation accuracy 0.91") and len(shown) < len(log) // 3


def test_a_real_summary_is_kept_less_the_prompts_words_said_back():
    from agent.context import checked_summary

    said = ("The observation is too long to keep in full. The script trained for 41 epochs and "
            "reached a validation accuracy of 0.91.")
    assert checked_summary(said, "x" * 5000, ContextSettings()) == (
        "The script trained for 41 epochs and reached a validation accuracy of 0.91.")
