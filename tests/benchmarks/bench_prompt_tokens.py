"""Prompt tokens per step: labcoat's prompt builder vs MLAgentBench's prompt rules.

One fixed, seeded 30-step research trace (long training logs, diffs, file reads, a plan that
grows) is replayed through

* labcoat's builder (``agent.context.build_messages``, the agent's default settings): compact
  action list, each step one entry (``Step N: <action>`` and its Research Plan and Status's
  change; while whole, its thought, input and observation), the whole steps appended as written
  until their observations pass ``whole_chars``, then all but the latest collapsed at once to
  their opening plus one line of what the observation reports (``agent.digest.gist``, e.g. a
  run's last output lines or an edit's size); observations over ``summarize_over`` (1,500)
  characters appear as their summaries once collapsed past, each shown whole up to 3,600
  characters until then; a script's output shows runs of lines that differ only in their
  numbers as a template and a table (``agent.digest.fold_repeats``, lossless), and
* a reimplementation of MLAgentBench's research-agent rules: the initial prompt (MLAgentBench
  tool usage blocks), then the last 3 steps whole -- each step's full response (Reflection,
  Research Plan and Status, Fact Check, Thought, Action, Action Input) and its observation,
  summarised when over 5,000 characters -- plus the research-log summary of older steps.

Both get the same information sources: the same summaries of long observations (a stand-in for
the fast model that keeps each observation's head and tail), a record of older steps (one line
each: labcoat's own lines; for MLAgentBench, ``mlab_log_line``, a stand-in for its research-log
retrieval that is smaller than the LLM-written log it replaces), the latest plan. The
difference is what the rules repeat (the plan, reflection and fact check of every kept step;
verbose tool usage), the threshold at which earlier observations are replaced by summaries,
and how compactly labcoat writes the same facts. Tokens are counted with one regex tokenizer
(words and punctuation; no tokenizer package is needed), identically for both. Goal: total
ratio <= 0.5. Measured: 0.494 with 3 whole steps collapsed three at a time; 0.496 with the
append-mostly history; 0.4997 with each plan told once, as its change; 0.481 with one entry per
step and the latest observation whole up to 3,600 characters, not 5,000
(``bench_prompt_cache.py``).

    python tests/benchmarks/bench_prompt_tokens.py [--summarize-over 3000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent import (
    digest,  # noqa: E402
    prompts,  # noqa: E402,F401
)
from agent.context import AgentStep, ContextSettings, build_messages, needs_summary  # noqa: E402
from agent.llm_actions import LLMActions  # noqa: E402
from environments.acting.low_level import LOW_LEVEL_ACTIONS  # noqa: E402

PROBLEM = (Path(__file__).resolve().parents[2] / "environments" / "tasks" / "digits" / "scripts"
           / "research_problem.txt")
MLAB_THRESHOLD = 5000

# MLAgentBench's research agent prompt (agents/agent_research.py), verbatim in substance.
MLAB_INITIAL = """You are a helpful research assistant. You have access to the following tools:
{tools_prompt}

Research Problem: {task_description}

You do not know anything about this problem so far.

Follow these instructions and do not forget them:
- First, come up with a high level plan based on your understanding of the problem and available tools and record it in the Research Plan and Status. You can revise the plan later.
- Research Plan and Status should well organized and succinctly keep track of 1) high level plan (can be revised), 2) what steps have been done and what steps are in progress, 3) short results and conclusions of each step after it has been performed. Do not perform action in the Research Plan and Status.
- Research Plan and Status must only include progress that has been confirmed by the previous observation directly. Do not include any results that are guessed or not confirmed.
- Follow the plan and try to achieve the goal as straightforwardly as possible.
- Highlight the supporting experiment results and reasoning before drawing any conclusions.
- Do not try installing any new packages or libraries.
- If you believe you have solved the problem, you can use the Final Answer action to submit your answer. You can only submit once, so double check that you have achieved the goal before submitting.

Always respond in this format exactly:
Reflection: What does the observation mean? If there is an error, what caused the error and how to debug?
Research Plan and Status: The full high level research plan, with current status and confirmed results of each step briefly annotated. It must only include progress that has been confirmed by the previous observation directly. Do not include any results that are guessed or not confirmed.
Fact Check: List all objective statements in the updates to Research Plan and Status one by one and point out whether it is guessed versus directly confirmed by the previous observation directly above. Performance numbers can only be confirmed by running the code and observing the output.
Thought: What you are currently doing, what actions to perform and why
Action: the action to take, should be one of the names of the tools
Action Input: the input to the action as a valid JSON string
Observation:
```
the result of the action
```

"""
KEEP = 3  # MLAgentBench's steps shown whole


def tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def summary(obs: str) -> str:
    """The fast model's summary, stood in for by the observation's head and tail (~800 chars)."""
    return "(summarised) " + obs[:400] + " ... " + obs[-400:]


def make_trace(seed: int = 0, n: int = 30) -> list[dict]:
    """A fixed 30-step trace: each step's response fields, action, input and observation."""
    rng = random.Random(seed)
    code = "\n".join(f"{i:3d}  x_{i} = np.dot(w_{i}, x_{i - 1}) + b_{i}  # layer {i % 7}" for i in range(1, 90))
    plan_items: list[str] = []
    steps = []
    kinds = ["List Files", "Understand File", "Inspect Script Lines", "Execute Script", "Edit Script (AI)",
             "Execute Script", "Reflection", "Edit Script Segment (AI)", "Execute Script", "Copy File"]
    for i in range(n):
        action = kinds[i % len(kinds)]
        epochs = rng.randint(5, 80)
        if action == "Execute Script":
            lines = [f"epoch {e + 1}/{epochs}: loss {rng.random():.4f}, validation accuracy {rng.random():.4f}"
                     for e in range(epochs)]
            obs = "The script has been executed. Here is the output:\n" + "\n".join(lines)
            args = {"script_name": "train.py"}
        elif action.startswith("Edit Script"):
            diff = "\n".join(f"{'-' if k % 2 else '+'} {code.splitlines()[k]}" for k in range(rng.randint(10, 70)))
            obs = f"The edited file is saved to train.py. Here is the diff:\n\n--- a/train.py\n+++ b/train.py\n{diff}"
            args = {"script_name": "train.py", "edit_instruction": "Add dropout after each hidden layer and "
                    "standardise the inputs with the training mean and std; keep everything else.",
                    "save_name": "train.py"}
            if action.endswith("Segment (AI)"):
                args.update(start_line_number=10, end_line_number=40)
        elif action == "Inspect Script Lines":
            obs = "Here are the lines (the file ends at line 89):\n\n" + "\n".join(code.splitlines()[:rng.randint(30, 90)])
            args = {"script_name": "train.py", "start_line_number": 1, "end_line_number": 100}
        elif action == "Understand File":
            obs = " ".join(f"Line {k}: the model applies layer {k % 7} with weights w_{k}." for k in range(rng.randint(10, 40)))
            args = {"file_name": "train.py", "things_to_look_for": "the model, the optimiser, the data loading"}
        elif action == "List Files":
            obs = "train.csv\ntest.csv\ntrain.py\nbackup/\n"
            args = {"dir_path": "."}
        elif action == "Reflection":
            obs = " ".join(f"Reflection point {k}: the validation accuracy moved by {rng.random():.3f}." for k in range(12))
            args = {"things_to_reflect_on": "which change helped most so far"}
        else:
            obs = "File train.py copied to train_v2.py"
            args = {"source": "train.py", "destination": "train_v2.py"}
        plan_items.append(f"{i + 1}. {action} on train.py: done, result {rng.random():.3f} confirmed by step {i + 1}.")
        fields = {
            "Reflection": f"The observation of step {i} shows the validation accuracy at {rng.random():.3f}; "
                          "no error occurred, and the change behaves as expected given the logs above.",
            "Research Plan and Status": "High level plan:\n1. Understand the data and train.py\n2. Measure the "
                                        "baseline\n3. Improve the model\n4. Submit\nStatus:\n" + "\n".join(plan_items),
            "Fact Check": f"The accuracy {rng.random():.3f} is directly confirmed by the previous observation; "
                          "the plan items are confirmed by earlier observations.",
            "Thought": f"Next I will run {action} to check whether the change of step {i} helps.",
        }
        steps.append({"index": i + 1, "action": action, "args": args, "observation": obs, "fields": fields})
    return steps


def response_text(s: dict) -> str:
    f = s["fields"]
    return (f"Reflection: {f['Reflection']}\nResearch Plan and Status: {f['Research Plan and Status']}\n"
            f"Fact Check: {f['Fact Check']}\nThought: {f['Thought']}\nAction: {s['action']}\n"
            f"Action Input: {json.dumps(s['args'], indent=4)}")


def specs():
    return [*LOW_LEVEL_ACTIONS, *LLMActions(None, None).specs()]


def mlab_prompt(trace: list[dict], upto: int, problem: str) -> str:
    """MLAgentBench's research agent prompt before step ``upto + 1``."""
    tools = "\n".join(s.describe() for s in specs())
    prompt = MLAB_INITIAL.format(tools_prompt=tools, task_description=problem)
    done = trace[:upto]
    if len(done) > KEEP:
        log = "\n".join(mlab_log_line(s) for s in done[:-KEEP])
        prompt += f"Here is a summary of relevant actions and observations you have done:\n```\n{log}\n```\n"
        prompt += "Here are the exact several steps you have done most recently (up to 3 steps):\n"
    else:
        prompt += "Now let's start!\n\n"
    for s in done[-KEEP:]:
        obs = s["observation"] if len(s["observation"]) <= MLAB_THRESHOLD else summary(s["observation"])
        prompt += response_text(s) + f"\nObservation:\n```\n{obs}\n```\n\n"
    return prompt


def mlab_log_line(s: dict, width: int = 100) -> str:
    """MLAgentBench's research-log entry for an older step (an LLM's account of its reasoning,
    action and observation), stood in for by one line: the action, its arguments, and the first
    and last lines of the observation (of its summary when over MLAgentBench's threshold)."""
    obs = s["observation"]
    shown = summary(obs)[len("(summarised) "):] if len(obs) > MLAB_THRESHOLD else obs
    args = digest.one_line(", ".join(str(v) for v in s["args"].values()), max(20, width // 3))
    return f"{s['index']}. {s['action']}({args}) -> {digest.generic_gist(shown, width)}"


def _agent_step(s: dict, settings: ContextSettings) -> AgentStep:
    """The agent's record of a step: the observation, and its summary when the agent makes one."""
    obs = s["observation"]
    short = summary(obs)[len("(summarised) "):] if needs_summary(obs, settings) else None
    return AgentStep(s["index"], s["action"], s["args"], obs, False, s["fields"]["Thought"], short, s["fields"])


def labcoat_prompt(trace: list[dict], upto: int, problem: str, settings: ContextSettings) -> str:
    done = trace[:upto]
    steps = [_agent_step(s, settings) for s in done]
    plan = done[-1]["fields"]["Research Plan and Status"] if done else ""
    budget = f"{50 - upto} of 50 steps, 200 of 240 min"
    messages = build_messages(problem, prompts.describe_actions(specs()), steps, plan, budget, settings)
    return "\n".join(m["content"] for m in messages)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summarize-over", type=int, default=ContextSettings().summarize_over)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    problem = PROBLEM.read_text() if PROBLEM.exists() else "Improve the test accuracy of train.py."
    settings = ContextSettings(summarize_over=args.summarize_over)  # otherwise the agent's defaults
    trace = make_trace()
    rows = []
    for upto in range(len(trace)):
        a = tokens(labcoat_prompt(trace, upto, problem, settings))
        b = tokens(mlab_prompt(trace, upto, problem))
        rows.append((upto + 1, a, b))
    total_a, total_b = sum(r[1] for r in rows), sum(r[2] for r in rows)
    if args.json:
        print(json.dumps({"steps": rows, "labcoat": total_a, "mlagentbench": total_b, "ratio": total_a / total_b}))
        return
    print(f"{'step':>4} {'labcoat':>8} {'MLAB':>8} {'ratio':>6}")
    for step, a, b in rows:
        print(f"{step:>4} {a:>8} {b:>8} {a / b:>6.2f}")
    print(f"total {total_a} vs {total_b} prompt tokens: ratio {total_a / total_b:.3f} (goal <= 0.5; "
          f"labcoat shows earlier observations over {settings.summarize_over} chars as summaries; "
          f"MLAgentBench summarises over {MLAB_THRESHOLD})")


if __name__ == "__main__":
    main()
