"""2RA Q-learning (Schmitt-Förster & Sutton, ICML 2024): regularised Q-learning by robust averaging.

N tabular estimates; each transition updates one table, chosen at random, towards
r + gamma * (max_a' mean_i Q_i(s', a') - sqrt(rho_t)). The penalty is the worst case over an
isotropic l2 ambiguity ball (the authors' code); rho_t -> 0 removes it asymptotically. The
baselines (Q, Double, Maxmin) share the same runner, so they see the same transition stream.
Only the tabular experiments are implemented (CartPole/LunarLander are out of scope).
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "experiment": ["run_maxbias", "run_random"],
    "learners": ["Learner", "isotropic_penalty", "make_learner", "rho_at", "step_sizes"],
    "mdp": ["RandomMDP", "bellman_backup", "make_random_mdp", "q_star", "sample_trajectories"],
})
