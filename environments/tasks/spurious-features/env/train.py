"""Baseline: plain ERM. Online SGD on the biased stream (8000 steps of 64, lr 0.05, logistic loss).

train(stream, balanced, seed) -> Net. ``stream(n)`` gives n fresh biased samples (512,000 in all);
``balanced`` is (x, y): 500 labelled samples where the spurious feature is uninformative.
"""


from model import make_net

from methods.spurious_boolean.model import sgd_step

STEPS, BATCH, LR = 8000, 64, 0.05


def train(stream, balanced, seed: int):
    net = make_net(seed)
    for _ in range(STEPS):
        x, y = stream(BATCH)
        sgd_step(net, x, y, LR)
    return net
