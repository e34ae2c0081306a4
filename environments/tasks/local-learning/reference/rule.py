"""Reference: local learning + successive gradient reconciliation (SGR, reconstructed).

Module l adds λ·mean_i ||G^in_{l,i} - G^out_{l-1,i}||² to its cross-entropy, where G^in is the
gradient of its own summed CE with respect to its (detached) input, kept differentiable by
double backprop, and G^out_{l-1} is the gradient module l-1 computed of its own CE with respect
to its output and passed forward as a constant. Isolation is kept: nothing flows back.
"""

from methods.sgr_local.rules import sgr_rule

CONFIG = {"lr": 1e-3, "optimizer": "adam", "schedule": "none", "batch_size": 64, "epochs": 40,
          "lam": 1.0}


def module_loss(ctx):
    return sgr_rule(ctx, lam=CONFIG["lam"], distance="l2")
