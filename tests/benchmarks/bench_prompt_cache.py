"""Prompt-prefix reuse: the share of each step's prompt that equals the previous step's prefix.

Providers cache a prompt's prefix (Anthropic with ``cache_control``, OpenAI automatically,
llama.cpp by keeping its KV cache): the longer the part of step N's prompt that step N-1 sent
identically, the less is paid and waited for. This replays the fixed 30-step trace of
``bench_prompt_tokens.py`` through labcoat's prompt builder and prints, per step, the tokens
(the same regex tokenizer) that open both this prompt and the previous one, as a share of this
prompt; goal: >= 0.8 over the run (token-weighted). Measured: 0.341 when the budget line opened
the step message and every step moved the whole-step window; 0.655 with the changing parts last,
whole steps collapsed three at a time and the plan told as its change since the last collapse;
0.730 with the append-mostly history (steps stay as written until their observations pass
``whole_chars``, then collapse in one block); 0.781 with nothing written twice that stays (a
collapse appends a block of older lines after the blocks before it; each plan told once, as its
change, in the whole step or the older block it belongs to; no plan restated in the tail), at a
prompt-token ratio of 0.4997 (``bench_prompt_tokens.py``). Where the rest goes (steps 2-30,
16,171 of 73,794 tokens not reused): each step's new block once, 14,066 (its observation whole
as MLAgentBench shows it 11,546, action input 690, thought 485, plan change ~630, action name
and labels ~720); the tail (budget, request) 667; at the collapses, each older step's line and
its plan change once more, 1,438 (1,218 to 1,594 for 4 to 17 collapses: each step's line is
written once however rarely they come). So the share is about ``1 - 16,200 / T`` for a prompt
total T, whatever the collapse schedule, and the token goal caps T (<= 73,836 for steps 2-30):
the new observations alone are 15.6% of that cap and everything the steps add 21.9%, so the two
goals meet only if what a step adds (its block, its line) is shown shorter.

With ``--local`` it also times the local model (``llamacpp/qwen2.5-coder-0.5b``, needs
``labcoat[local]`` and the model packages): a cold call, then the next step's prompt warm
(llama.cpp re-evaluates only what differs from the last prompt), replies capped at 16 tokens
so the time is the prompt's.

    python tests/benchmarks/bench_prompt_cache.py [--local] [--threads 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent.context import ContextSettings  # noqa: E402
from agent.models.llamacpp_model import common_prefix  # noqa: E402 - imports no llama_cpp until used
from tests.benchmarks.bench_prompt_tokens import PROBLEM, labcoat_prompt, make_trace  # noqa: E402


def token_list(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def reuse(prompts: list[str]) -> list[tuple[int, int, int]]:
    """(step, prompt tokens, tokens shared with the previous prompt's opening) per step."""
    rows, prev = [], None
    for i, text in enumerate(prompts, 1):
        toks = token_list(text)
        rows.append((i, len(toks), common_prefix(prev, toks) if prev is not None else 0))
        prev = toks
    return rows


def local_latency(prompts: list[str], threads: int, steps: tuple[int, int] = (10, 11)) -> dict:
    """Seconds of a cold and a warm call of the local model on two consecutive steps' prompts
    (0-based: steps 11 and 12, between two collapses, as most steps are)."""
    from agent.models import make_model

    model = make_model(f"llamacpp/qwen2.5-coder-0.5b?threads={threads}&max_tokens=16&grammar=false")
    out = {}
    for label, k in zip(("cold", "warm"), steps, strict=True):
        messages = [{"role": "user", "content": prompts[k]}]
        start = time.perf_counter()
        reply = model.complete(messages)
        out[label] = {"step": k + 1, "seconds": round(time.perf_counter() - start, 2),
                      "prompt_tokens": reply.usage.input, "reused_tokens": reply.usage.cached}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--local", action="store_true", help="also time the local model (cold, warm)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--step", type=int, default=11, help="the cold step (1-based); the next is the warm one")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    problem = PROBLEM.read_text() if PROBLEM.exists() else "Improve the test accuracy of train.py."
    settings = ContextSettings()  # the agent's defaults
    trace = make_trace()
    prompts = [labcoat_prompt(trace, upto, problem, settings) for upto in range(len(trace))]
    rows = reuse(prompts)
    later = rows[1:]  # the first prompt has nothing before it
    share = sum(r[2] for r in later) / sum(r[1] for r in later)
    mean = sum(r[2] / r[1] for r in later) / len(later)
    result = {"steps": rows, "share": round(share, 3), "mean_share": round(mean, 3)}
    if args.local:
        result["local"] = local_latency(prompts, args.threads, (args.step - 1, args.step))
    if args.json:
        print(json.dumps(result))
        return
    print(f"{'step':>4} {'tokens':>7} {'reused':>7} {'share':>6}")
    for step, n, shared in rows:
        print(f"{step:>4} {n:>7} {shared:>7} {shared / n:>6.2f}")
    print(f"prefix reuse over steps 2-{len(rows)}: {share:.3f} of prompt tokens (mean per step {mean:.3f}; "
          "goal >= 0.8)")
    if args.local:
        for label, r in result["local"].items():
            print(f"local model, {label} step {r['step']}: {r['seconds']} s, {r['prompt_tokens']} prompt tokens, "
                  f"{r['reused_tokens']} reused from the KV cache")


if __name__ == "__main__":
    main()
