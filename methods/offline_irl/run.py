"""The ``feasible_reward_check`` tool: load or generate an instance, test rewards, report."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from methods._data import load_npz
from methods.offline_irl.estimate import estimate_from_data
from methods.offline_irl.mdp import MDP, generate_instance, sample_datasets
from methods.offline_irl.membership import estimated_membership, exact_membership
from methods.offline_irl.rewards import candidate_pool
from methods.offline_irl.scoring import compare_to_truth, missed_expert_states
from methods.offline_irl.tools import FeasibleRewardCheckArgs


def _load_instance(args: FeasibleRewardCheckArgs) -> tuple[dict[str, Any], MDP | None, Any]:
    """Returns (data dict with D_E, D_b, S, A, H), the true MDP if known, and r_true if known."""
    if args.instance == "generate":
        mdp, r_true = generate_instance(args.S, args.A, args.horizon, args.seed, args.d_min)
        D_E, D_b = sample_datasets(mdp, args.n_episodes, args.seed)
        return {"D_E": D_E, "D_b": D_b, "S": args.S, "A": args.A, "H": args.horizon}, mdp, r_true
    raw = load_npz(args.instance, "instance")
    missing = [k for k in ("D_E", "D_b", "S", "A", "H") if k not in raw]
    if missing:
        raise ValueError(f"instance: the npz lacks {missing}")
    data = {k: raw[k] for k in ("D_E", "D_b")} | {k: int(raw[k]) for k in ("S", "A", "H")}
    mdp = None
    if all(k in raw for k in ("P", "d0", "pi_E", "pi_b")):
        mdp = MDP(P=raw["P"].astype(float), d0=raw["d0"].astype(float),
                  pi_E=raw["pi_E"].astype(np.int64), pi_b=raw["pi_b"].astype(float))
        if mdp.P.shape != (data["H"], data["S"], data["A"], data["S"]):
            raise ValueError("instance: P must have shape (H, S, A, S)")
    return data, mdp, None


def _load_rewards(args: FeasibleRewardCheckArgs, mdp: MDP | None, r_true, shape) -> np.ndarray:
    if args.rewards == "pool":
        if mdp is None:
            raise ValueError("rewards: the pool needs the true expert policy (pi_E, P, d0, pi_b "
                             "in the instance npz); pass an npz with R instead")
        return candidate_pool(mdp.pi_E, mdp.A, args.seed, r_true=r_true)
    raw = load_npz(args.rewards, "rewards")
    if "R" not in raw:
        raise ValueError("rewards: the npz has no array R")
    R = np.asarray(raw["R"], dtype=float)
    if R.ndim != 4 or R.shape[1:] != shape:
        raise ValueError(f"rewards: R must have shape (K, H, S, A) = (K, {shape}), got {R.shape}")
    if not np.all(np.isfinite(R)) or R.min() < -1.0 or R.max() > 1.0:
        raise ValueError("rewards: every reward must lie in [-1, 1]")
    return R


def feasible_reward_check(args: FeasibleRewardCheckArgs) -> dict[str, Any]:
    data, mdp, r_true = _load_instance(args)
    H, S, A = data["H"], data["S"], data["A"]
    if args.algorithm == "exact" and mdp is None:
        raise ValueError("algorithm: exact needs the true P, d0, pi_E and pi_b in the instance")
    R = _load_rewards(args, mdp, r_true, (H, S, A))
    est = estimate_from_data(data["D_E"], data["D_b"], S, A, H)
    test = args.test or ("tight" if args.bonus == "l1" else "cross")
    print(f"testing {R.shape[0]} rewards with {args.algorithm}", file=sys.stderr)

    truth = None
    if mdp is not None:
        true_sub, true_sup = exact_membership(R, mdp.P, mdp.covered(), mdp.expert_states(),
                                              mdp.pi_E)
    if args.algorithm == "exact":
        in_sub, in_sup = true_sub, true_sup
    else:
        in_sub, in_sup = estimated_membership(est, R, args.algorithm, args.bonus, test,
                                              args.bonus_scale, args.delta)
    if mdp is not None:
        truth = compare_to_truth(in_sub, in_sup, true_sub, true_sup)
        truth["missed_expert_states"] = missed_expert_states(mdp.expert_states(),
                                                             est.expert_states)
    np.savez(args.out, in_subset=in_sub, in_superset=in_sup)
    config = args.model_dump() | {"test": test}
    return {
        "n_rewards": int(R.shape[0]),
        "n_subset": int(in_sub.sum()),
        "n_superset": int(in_sup.sum()),
        "membership_npz": str(args.out),
        "covered_triples": int(est.covered.sum()),
        "expert_states": int(est.expert_states.sum()),
        "truth": truth,
        "r_true_index": int(R.shape[0] - 1) if r_true is not None and args.rewards == "pool"
        else None,
        "config": config,
    }
