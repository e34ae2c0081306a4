"""Reference: two-pass Arrow. Score the *base* model's hidden state tanh(W1 x + b1) with the
layer-1 (second layer) prototypes, take the top-1 expert, and use it at both layers: the
first-layer prototypes are nearly alike (all experts share A's initial column space), the
second layer's separate the clusters well."""

import torch

from library import load_base, load_experts
from methods.lora_library import arrow_prototypes, arrow_route

A, B = load_experts()
BASE = load_base()
PROTO2 = arrow_prototypes(A[1], B[1])


def route(x, h, layer):
    with torch.no_grad():
        hidden = torch.tanh(BASE[0](x))
    return arrow_route(hidden, PROTO2, top_k=1, temperature=1.0)
