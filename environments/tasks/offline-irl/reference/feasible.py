"""Reference: a Weissman L1 confidence set with the "tight" tests (methods.offline_irl).

The L1 ball {q : ||q - p̂||_1 <= β} holds for every value vector at once, so it needs no union
bound over the K tested rewards (the Hoeffding bonus does); and the tight test bounds exactly the
Q-values the exact membership test compares (optimistic max-completion against its pessimistic
counterpart) instead of crossing an optimistic Q with a fully pessimistic one.
"""

from __future__ import annotations

from methods.offline_irl import estimate_from_data, estimated_membership


def classify(inst):
    S, A, H = int(inst["S"]), int(inst["A"]), int(inst["H"])
    est = estimate_from_data(inst["D_E"], inst["D_b"], S, A, H)
    return estimated_membership(est, inst["R"], algorithm="pirlo", bonus="l1", test="tight",
                                delta=float(inst["delta"]))
