"""How many of a small local model's replies the research agent can use, with and without the
actions' grammar (llama.cpp GBNF, :mod:`agent.models.grammar`).

Runs the research agent with ``llamacpp/qwen2.5-coder-0.5b`` on a task (episodes of
``--steps`` steps, repeated until ``--replies`` agent replies are collected per setting) and
counts, from each run's call log, the agent replies that parse (:func:`agent.models.react_format.
parse_response`) and name a known action with a valid input, as the agent checks them. A reply
the agent could not use was re-asked; a run of four ends the episode. Needs ``labcoat[local]``
and the model packages; CPU heavy (about 20 s a reply on one thread).

    python tests/benchmarks/bench_prompt_grammar.py [--task vectorization] [--replies 20]
                                                    [--steps 6] [--threads 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent.factory import make_actor  # noqa: E402
from agent.models.react_format import FormatError, parse_response  # noqa: E402
from agent.runner import Budgets, create_run, drive  # noqa: E402
from environments.acting.actions import ActionInputError  # noqa: E402
from environments.acting.environment import environment_for_run  # noqa: E402


def usable(text: str, env) -> bool:
    try:
        parsed = parse_response(text)
    except FormatError:
        return False
    spec = env.lookup(parsed.action)
    if spec is None:
        return False
    try:
        spec.validate(parsed.action_input)
    except ActionInputError:
        return False
    return True


def measure(task: str, grammar: bool, replies: int, steps: int, threads: int, root: Path) -> dict:
    model = (f"llamacpp/qwen2.5-coder-0.5b?threads={threads}&max_tokens=384"
             f"&grammar={'true' if grammar else 'false'}")
    seen, ok, episodes, seconds = 0, 0, 0, 0.0
    while seen < replies:
        actor = make_actor(None, model=model)
        run, spec = create_run(task, actor, root / f"g{int(grammar)}", sandbox="local", model=model,
                               budgets=Budgets(max_steps=steps))
        start = time.perf_counter()
        drive(run, spec, actor)
        seconds += time.perf_counter() - start
        episodes += 1
        env = environment_for_run(run, spec, extra_actions=actor.extra_actions())
        env.sandbox.close()
        for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines():
            call = json.loads(line)
            if call["role"] == "agent" and call["reply"] is not None:
                seen += 1
                ok += usable(call["reply"], env)
    return {"grammar": grammar, "replies": seen, "usable": ok, "share": round(ok / seen, 3),
            "episodes": episodes, "seconds_per_reply": round(seconds / seen, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="vectorization")
    ap.add_argument("--replies", type=int, default=20)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(args.task, g, args.replies, args.steps, args.threads, Path(tmp)) for g in (True, False)]
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(f"grammar {'on ' if r['grammar'] else 'off'}: {r['usable']}/{r['replies']} agent replies usable "
              f"({r['share']:.0%}) over {r['episodes']} episodes, {r['seconds_per_reply']} s a reply")


if __name__ == "__main__":
    main()
