"""Reference: ERM on the stream, then last-layer retraining (LLR) on the balanced set.

The hidden layer trained on biased data still carries the core features (the spurious one is
learned first but the core is not lost), so refitting only the last layer, by l2-regularised
logistic regression on the frozen ReLU features of the 500 balanced samples, recovers
worst-group accuracy.
"""

from model import make_net

from methods.spurious_boolean.metrics import last_layer_retrain
from methods.spurious_boolean.model import sgd_step

STEPS, BATCH, LR = 8000, 64, 0.05


def train(stream, balanced, seed: int):
    net = make_net(seed)
    for _ in range(STEPS):
        x, y = stream(BATCH)
        sgd_step(net, x, y, LR)
    x_bal, y_bal = balanced
    return last_layer_retrain(net, x_bal, y_bal, C=1.0)
