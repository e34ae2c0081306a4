"""2RA Q-learning (Schmitt-Förster & Sutton, ICML 2024): regularised Q-learning by robust averaging.

N tabular estimates; each transition updates one table, chosen at random, towards
r + gamma * (max_a' mean_i Q_i(s', a') - sqrt(rho_t)). The penalty is the worst case over an
isotropic l2 ambiguity ball (the authors' code); rho_t -> 0 removes it asymptotically. The
baselines (Q, Double, Maxmin) share the same runner, so they see the same transition stream.
Only the tabular experiments are implemented (CartPole/LunarLander are out of scope).
"""

# Lazy: the workbench imports this package to read tools.py, which must not pull in
# numpy/scipy/torch; attributes load their module on first use (PEP 562).
from importlib import import_module

_EXPORTS = {
    "Learner": "methods.twora_q.learners",
    "RandomMDP": "methods.twora_q.mdp",
    "bellman_backup": "methods.twora_q.mdp",
    "isotropic_penalty": "methods.twora_q.learners",
    "make_learner": "methods.twora_q.learners",
    "make_random_mdp": "methods.twora_q.mdp",
    "q_star": "methods.twora_q.mdp",
    "rho_at": "methods.twora_q.learners",
    "run_maxbias": "methods.twora_q.experiment",
    "run_random": "methods.twora_q.experiment",
    "sample_trajectories": "methods.twora_q.mdp",
    "step_sizes": "methods.twora_q.learners",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
