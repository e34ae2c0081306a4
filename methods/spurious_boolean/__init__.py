"""Boolean spurious features (Qiu, Kuang & Goel, ICML 2024), at CPU scale.

A one-hidden-layer ReLU net learns a core parity by online SGD while a simpler spurious parity
agrees with the label with probability λ; last-layer retraining (LLR) on a small balanced set
recovers worst-group accuracy because the core features are learned. Reconstructed from the
abstracts and the authors' dataset code only (NayutaQiu/Boolean_Spurious): the λ convention
(P(y_s = y) = λ) is the code's; the paper's complexity measure, its staircase functions and its
numbers are unverified, and findings (b)-(d) are only reported (unit split, spurious probe), not
reproduced.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "data": ["Batch", "BooleanTask", "parity", "sample"],
    "metrics": ["evaluate", "last_layer_retrain", "spur_probe_acc", "unit_split"],
    "model": ["Net", "logistic_loss", "make_net", "sgd_step"],
    "train": ["RunConfig", "llr_set", "run_seed", "test_set"],
})
