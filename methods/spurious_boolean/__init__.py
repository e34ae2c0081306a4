"""Boolean spurious features (Qiu, Kuang & Goel, ICML 2024), at CPU scale.

A one-hidden-layer ReLU net learns a core parity by online SGD while a simpler spurious parity
agrees with the label with probability λ; last-layer retraining (LLR) on a small balanced set
recovers worst-group accuracy because the core features are learned. Reconstructed from the
abstracts and the authors' dataset code only (NayutaQiu/Boolean_Spurious): the λ convention
(P(y_s = y) = λ) is the code's; the paper's complexity measure, its staircase functions and its
numbers are unverified, and findings (b)-(d) are only reported (unit split, spurious probe), not
reproduced.
"""

from methods.spurious_boolean.data import Batch, BooleanTask, parity, sample
from methods.spurious_boolean.metrics import (
    evaluate,
    last_layer_retrain,
    spur_probe_acc,
    unit_split,
)
from methods.spurious_boolean.model import Net, logistic_loss, make_net, sgd_step
from methods.spurious_boolean.train import RunConfig, llr_set, run_seed, test_set, train

__all__ = [
    "Batch",
    "BooleanTask",
    "Net",
    "RunConfig",
    "evaluate",
    "last_layer_retrain",
    "llr_set",
    "logistic_loss",
    "make_net",
    "parity",
    "run_seed",
    "sample",
    "sgd_step",
    "spur_probe_acc",
    "test_set",
    "train",
    "unit_split",
]
