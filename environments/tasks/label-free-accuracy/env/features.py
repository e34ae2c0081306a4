"""Label-free features of one unlabelled set, from which the scorer predicts the source model's
accuracy on it (least squares with an intercept, leave-one-corruption-out).

Baseline: the weighted flips W of test-time entropy minimisation (Tent-style, 300 SGD steps on
the BatchNorm affine parameters, batch statistics at both ends), and W squared.
"""

from methods.entropy_enigma import estimate_flips


def features(model, X):
    """1-3 finite floats for one set. ``model``: a fresh copy of the source model (eval mode,
    running BN statistics); ``X``: (n, 64) float32 images. Never sees labels."""
    w = estimate_flips(model, X, steps=300, lr=5e-3, reference="batch_stats").weighted_flips
    return [w, w * w]
