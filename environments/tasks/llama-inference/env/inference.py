"""A small decoder-only transformer (LLaMA-style: RMSNorm, SwiGLU, causal attention) and its
greedy text generation, written plainly and slowly.

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

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        head = DIM // N_HEADS
        q = self.wq(x).view(b, t, N_HEADS, head).transpose(1, 2)
        k = self.wk(x).view(b, t, N_HEADS, head).transpose(1, 2)
        v = self.wv(x).view(b, t, N_HEADS, head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / head**0.5
        causal = torch.ones(t, t).tril().bool()
        scores = scores.masked_fill(~causal, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, t, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attn_norm(x))
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

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, VOCAB) for every position of ``tokens`` (B, T)."""
        positions = torch.arange(tokens.shape[1])
        x = self.tok_emb(tokens) + self.pos_emb(positions)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def build_model(weights: dict[str, torch.Tensor]) -> TinyLM:
    model = TinyLM()
    model.load_state_dict(weights)
    return model.eval()


def generate(model: TinyLM, prompts: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding: (B, T0) int64 prompts -> (B, T0 + max_new_tokens) int64 tokens.

    One prompt at a time, and the whole sequence is run through the model again for every
    new token.
    """
    outputs = []
    for prompt in prompts:
        tokens = prompt[None, :]
        for _ in range(max_new_tokens):
            logits = model(tokens)
            next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], dim=1)
        outputs.append(tokens[0])
    return torch.stack(outputs)


if __name__ == "__main__":
    model = build_model(make_weights(seed=0))
    prompts = torch.randint(0, VOCAB, (8, 16), generator=torch.Generator().manual_seed(1))
    new_tokens = 48
    start = time.perf_counter()
    out = generate(model, prompts, new_tokens)
    elapsed = time.perf_counter() - start
    print(f"generated {out.shape[0]} x {new_tokens} tokens in {elapsed:.3f} s: "
          f"{out.shape[0] * new_tokens / elapsed:.1f} tokens/s")
