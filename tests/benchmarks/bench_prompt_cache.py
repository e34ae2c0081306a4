"""Prompt-prefix reuse: the share of each step's prompt that equals the previous step's prefix.

Providers cache a prompt's prefix (Anthropic with ``cache_control``, OpenAI automatically,
llama.cpp by keeping its KV cache): the longer the part of step N's prompt that step N-1 sent
identically, the less is paid and waited for. This replays the fixed 30-step trace of
``bench_prompt_tokens.py`` through labcoat's prompt builder and prints, per step, the tokens
(the same regex tokenizer) that open both this prompt and the previous one, as a share of this
prompt; goal: >= 0.8 over the run (token-weighted). Measured: 0.341 when the budget line opened
the step message and every step moved the whole-step window; 0.655 with the changing parts last,
whole steps collapsed three at a time and the plan told as its change since the last collapse;
0.730 with the append-mostly history; 0.781 with nothing written twice that stays, at a
prompt-token ratio of 0.4997 (``bench_prompt_tokens.py``); **0.802** at a ratio of **0.481**
with each step one entry whose opening (``Step N: <action>``, its plan's change) a collapsed
step keeps, so a collapse keeps the prompt up to the first step it collapses, and an
observation over ``whole_chars`` (3,600) shown as its
summary even when it is the latest (one larger cannot be whole beside any other step; MLAgentBench
shows up to 5,000 whole). Without the closing request it was 0.807, but the 0.5B model then
edits before it has looked at anything, so the request stays. Where the rest goes (steps 2-30,
14,037 of 70,930 tokens not reused): the new observations 9,545; the rest of each new entry
2,433 (plan change, thought, input, labels); at collapses, the collapsed steps' lines and the
later ones' plan changes, 1,392; the budget and the request 667. The share is about ``1 - N / T`` for what the steps add N and the prompts' total T,
which the token goal caps, so it moves with what a step adds, not with the collapse schedule.
``--seeds K`` replays K more traces of the same generator (seeds 1..K) with their own
MLAgentBench totals: over seeds 0-7, share 0.796 on average (0.782 to 0.809) at a ratio of 0.481
on average (at most 0.505): the goals hold on the benchmark trace, at the edge of both elsewhere.
The same prompts counted with the 0.5B model's own tokenizer (numbers split into digits):
share 0.726 -> 0.750, ratio 0.516 -> 0.481.

With ``--local`` it also times the local model (``llamacpp/qwen2.5-coder-0.5b``, needs
``labcoat[local]`` and the model packages): a cold call, then the next step's prompt warm
(llama.cpp re-evaluates only what differs from the last prompt), replies capped at 16 tokens
so the time is the prompt's.

    python tests/benchmarks/bench_prompt_cache.py [--local] [--threads 1] [--seeds K] [--json]
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
from tests.benchmarks.bench_prompt_tokens import (  # noqa: E402
    PROBLEM,
    labcoat_prompt,
    make_trace,
    mlab_prompt,
    tokens,
)


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


def share_of(rows: list[tuple[int, int, int]]) -> float:
    """Token-weighted share over every step but the first (which has nothing before it)."""
    later = rows[1:]
    return sum(r[2] for r in later) / sum(r[1] for r in later)


def spread(problem: str, settings: ContextSettings, seeds: int) -> list[dict]:
    """Share and prompt-token ratio (against MLAgentBench's rules) on traces 0..seeds."""
    out = []
    for seed in range(seeds + 1):
        trace = make_trace(seed)
        prompts = [labcoat_prompt(trace, upto, problem, settings) for upto in range(len(trace))]
        ours = sum(tokens(p) for p in prompts)
        theirs = sum(tokens(mlab_prompt(trace, upto, problem)) for upto in range(len(trace)))
        out.append({"seed": seed, "share": round(share_of(reuse(prompts)), 3), "ratio": round(ours / theirs, 3)})
    return out


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
    ap.add_argument("--seeds", type=int, default=0, help="also replay traces of seeds 1..K")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    problem = PROBLEM.read_text() if PROBLEM.exists() else "Improve the test accuracy of train.py."
    settings = ContextSettings()  # the agent's defaults
    trace = make_trace()
    prompts = [labcoat_prompt(trace, upto, problem, settings) for upto in range(len(trace))]
    rows = reuse(prompts)
    later = rows[1:]  # the first prompt has nothing before it
    share = share_of(rows)
    mean = sum(r[2] / r[1] for r in later) / len(later)
    result = {"steps": rows, "share": round(share, 3), "mean_share": round(mean, 3)}
    if args.seeds:
        result["seeds"] = spread(problem, settings, args.seeds)
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
    for r in result.get("seeds", []):
        print(f"trace seed {r['seed']}: share {r['share']:.3f}, prompt-token ratio {r['ratio']:.3f}")
    if args.local:
        for label, r in result["local"].items():
            print(f"local model, {label} step {r['step']}: {r['seconds']} s, {r['prompt_tokens']} prompt tokens, "
                  f"{r['reused_tokens']} reused from the KV cache")


if __name__ == "__main__":
    main()
