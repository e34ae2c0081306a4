"""Reference: [d, W]. d is the share of images on which the source model as deployed (running
BN statistics) and the same model with batch statistics disagree, before any adaptation: how far
the set's feature statistics sit from the source's. W is the baseline's weighted flips."""

import torch

from methods.entropy_enigma import configure_for_em, estimate_flips


def features(model, X):
    x = torch.as_tensor(X)
    with torch.no_grad():
        deployed = model.eval()(x).argmax(dim=1)
        batch_stats = configure_for_em(model)(x).argmax(dim=1)
    d = (deployed != batch_stats).float().mean().item()
    w = estimate_flips(model, X, steps=300, lr=5e-3, reference="batch_stats").weighted_flips
    return [d, w]
