"""The arrival distribution of this task (the 'scaled' family) and a dev-set runner.

An instance (T arrivals, m = 4 resources) is drawn as follows, with numpy default_rng([T, seed, 5]):
    u ~ U[0.8, 1.25]^m   (per-instance resource scales)
    s ~ U[0.8, 1.25]     (per-instance reward scale)
    a_t = u * U[0,1]^m,  c_t = s * U[0,1],  budget per arrival d = 0.25 * u.
Regret is reported divided by s, so it is comparable across instances. The private instances
use other seeds; neither the seed, u nor s is given to the policy (d is).
"""

from __future__ import annotations

import numpy as np

from methods.online_lp.instances import Instance, make_instance
from methods.online_lp.interface import InterfaceResult, run_policy
from methods.online_lp.simulate import Batch

T = 128_000
M = 4
BASE_BUDGET = 0.25


def make(seed: int, T: int = T) -> Instance:
    """One instance of the task's family (the generator eval uses)."""
    return make_instance("scaled", T, M, seed, BASE_BUDGET)


def run(policy_module, instances: list[Instance]) -> InterfaceResult:
    """Run policy_module.init/decide on the instances together, exactly as eval does."""
    return run_policy(policy_module.init, policy_module.decide, Batch.stack(instances))


def normalised_regret(opt: np.ndarray, result: InterfaceResult, scales: np.ndarray) -> np.ndarray:
    return (opt - result.reward) / scales
