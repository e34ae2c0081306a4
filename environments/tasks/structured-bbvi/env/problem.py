"""The model eval fits: Gaussian hierarchical linear regression (exact posterior known).

beta ~ N(0, I_2) global, z_n ~ N(0, I_2) for each of N = 32 groups, and 5 observations per group
y_nj = x_nj^T beta + w_nj^T z_n + noise, noise ~ N(0, 1). The variables are ordered
theta = (beta, z_1, ..., z_N), so d = 2 + 2N = 66. Dev problems use seeds 0-2; eval uses private
problem and Monte Carlo seeds. Your family never sees the data: eval owns log p.
"""

from methods.structured_bbvi.problem import HierProblem, make_problem

N, D_GLOBAL, D_LOCAL, OBS_PER_GROUP = 32, 2, 2, 5
DEV_SEEDS = (0, 1, 2)


def dev_problem(seed: int) -> HierProblem:
    return make_problem(N, D_GLOBAL, D_LOCAL, OBS_PER_GROUP, problem_seed=seed)
