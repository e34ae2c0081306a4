"""Score estimator.py on the development MDP (env_seed 1234): MSE curve and AUC (lower is better)."""

import time

import estimator
from env import evaluate

start = time.perf_counter()
(res,) = evaluate(estimator)
for step, mse, se in zip(res.steps, res.mse, res.se):
    print(f"step {step:>6}  mse {mse:8.4f}  (se {se:.4f})")
print(f"dev mse_auc {res.mse_auc:.4f}  final {res.mse_final:.4f}  bias {res.bias:+.4f}  "
      f"({time.perf_counter() - start:.1f} s)")
