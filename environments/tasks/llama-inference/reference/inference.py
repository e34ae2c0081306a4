"""A small decoder-only transformer (LLaMA-style: RMSNorm, SwiGLU, causal attention) and its
greedy text generation, made fast (reference solution).

Same model and weights as the starting script; generation (1) runs under ``torch.inference_mode``
(no autograd bookkeeping), (2) decodes the whole batch of prompts together, and (3) keeps a
key/value cache, so each new token costs one position's worth of work instead of a pass over
the whole sequence. The maths is unchanged, so the greedy tokens are the same.

``scripts/eval.py`` imports this file, calls ``build_model(weights)`` with its own fixed random
weights (a dict shaped like ``make_weights``' output), then times
``generate(model, prompts, max_new_tokens)`` and checks that the tokens it returns are exactly
those of this reference implementation.

Run ``python inference.py`` to time generation yourself.
"""

from __future__ import annotations

import time

import torch
from torch import nn

VOCAB = 256
DIM = 128
N_LAYERS = 4
N_HEADS = 4
FFN = 384
MAX_LEN = 96

torch.set_num_threads(1)


def make_weights(seed: int) -> dict[str, torch.Tensor]:
    """Fixed random weights (a stand-in for a checkpoint), keyed like ``TinyLM.state_dict()``."""
    g = torch.Generator().manual_seed(seed)

    def normal(*shape: int, std: float) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * std

    weights = {
        "tok_emb.weight": normal(VOCAB, DIM, std=1.0),
        "pos_emb.weight": normal(MAX_LEN, DIM, std=0.5),
        "norm.weight": 1.0 + normal(DIM, std=0.1),
        "lm_head.weight": normal(VOCAB, DIM, std=4.0 / DIM**0.5),
    }
    for i in range(N_LAYERS):
        p = f"layers.{i}."
        weights.update({
            p + "attn_norm.weight": 1.0 + normal(DIM, std=0.1),
            p + "wq.weight": normal(DIM, DIM, std=DIM**-0.5),
            p + "wk.weight": normal(DIM, DIM, std=DIM**-0.5),
            p + "wv.weight": normal(DIM, DIM, std=DIM**-0.5),
            p + "wo.weight": normal(DIM, DIM, std=DIM**-0.5 / 2),
            p + "ffn_norm.weight": 1.0 + normal(DIM, std=0.1),
            p + "w1.weight": normal(FFN, DIM, std=DIM**-0.5),
            p + "w3.weight": normal(FFN, DIM, std=DIM**-0.5),
            p + "w2.weight": normal(DIM, FFN, std=FFN**-0.5 / 2),
        })
    return weights


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(DIM)
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, DIM, bias=False)
        self.wv = nn.Linear(DIM, DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.ffn_norm = RMSNorm(DIM)
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w3 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)

    def attention(self, x: torch.Tensor, cache: dict | None = None) -> torch.Tensor:
        """Causal self-attention of the new positions ``x`` over the cached ones and themselves."""
        b, t, _ = x.shape
        head = DIM // N_HEADS
        q = self.wq(x).view(b, t, N_HEADS, head).transpose(1, 2)
        k = self.wk(x).view(b, t, N_HEADS, head).transpose(1, 2)
        v = self.wv(x).view(b, t, N_HEADS, head).transpose(1, 2)
        past = 0
        if cache is not None:
            if "k" in cache:
                past = cache["k"].shape[2]
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        scores = q @ k.transpose(-2, -1) / head**0.5
        if t > 1:
            causal = torch.ones(t, past + t).tril(diagonal=past).bool()
            scores = scores.masked_fill(~causal, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, t, DIM))

    def forward(self, x: torch.Tensor, cache: dict | None = None) -> torch.Tensor:
        x = x + self.attention(self.attn_norm(x), cache)
        h = self.ffn_norm(x)
        return x + self.w2(nn.functional.silu(self.w1(h)) * self.w3(h))


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, DIM)
        self.pos_emb = nn.Embedding(MAX_LEN, DIM)
        self.layers = nn.ModuleList(Block() for _ in range(N_LAYERS))
        self.norm = RMSNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor, caches: list[dict] | None = None,
                start: int = 0) -> torch.Tensor:
        """Logits (B, T, VOCAB) for ``tokens`` (B, T) at positions start .. start + T - 1."""
        positions = torch.arange(start, start + tokens.shape[1])
        x = self.tok_emb(tokens) + self.pos_emb(positions)
        for i, layer in enumerate(self.layers):
            x = layer(x, None if caches is None else caches[i])
        return self.lm_head(self.norm(x))


def build_model(weights: dict[str, torch.Tensor]) -> TinyLM:
    model = TinyLM()
    model.load_state_dict(weights)
    return model.eval()


@torch.inference_mode()
def generate(model: TinyLM, prompts: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding: (B, T0) int64 prompts -> (B, T0 + max_new_tokens) int64 tokens.

    All prompts at once; the prompt is run through the model once to fill the key/value
    caches, then each step feeds only the newest token.
    """
    caches: list[dict] = [{} for _ in model.layers]
    logits = model(prompts, caches, start=0)
    out = torch.empty(prompts.shape[0], prompts.shape[1] + max_new_tokens, dtype=torch.int64)
    out[:, : prompts.shape[1]] = prompts
    position = prompts.shape[1]
    for step in range(max_new_tokens):
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        out[:, position : position + 1] = next_token
        if step + 1 < max_new_tokens:
            logits = model(next_token, caches, start=position)
        position += 1
    return out


if __name__ == "__main__":
    model = build_model(make_weights(seed=0))
    prompts = torch.randint(0, VOCAB, (8, 16), generator=torch.Generator().manual_seed(1))
    new_tokens = 48
    start = time.perf_counter()
    out = generate(model, prompts, new_tokens)
    elapsed = time.perf_counter() - start
    print(f"generated {out.shape[0]} x {new_tokens} tokens in {elapsed:.3f} s: "
          f"{out.shape[0] * new_tokens / elapsed:.1f} tokens/s")
