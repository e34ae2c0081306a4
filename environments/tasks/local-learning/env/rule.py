"""The per-module local learning rule: what you change.

``CONFIG`` holds training settings the harness reads (lr, optimizer "adam"|"sgd", momentum,
weight_decay, schedule "none"|"cosine", batch_size, epochs <= 40) and any settings of your own.
``module_loss(ctx)`` returns (loss, forward): the loss module ctx.index minimises, and what module
ctx.index + 1 receives as ctx.prev (anything computed locally, e.g. a tensor or a dict; it is
detached). See harness.py for the fields of ctx.

Baseline: plain non-greedy local learning (each module's own cross-entropy, nothing passed on).
"""

import torch.nn.functional as F

CONFIG = {"lr": 1e-3, "optimizer": "adam", "schedule": "none", "batch_size": 64, "epochs": 40}


def module_loss(ctx):
    return F.cross_entropy(ctx.logits, ctx.y), None
