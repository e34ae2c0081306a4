"""Print the policy's regret/s on the 8 dev instances (seeds 0-7, T = 128,000).

The hindsight optima are cached in data/dev.json. Usage: python run_dev.py [n_instances]
"""

import json
import sys
import time
from pathlib import Path

import env
import numpy as np
import policy

HERE = Path(__file__).resolve().parent


def main() -> None:
    dev = json.loads((HERE / "data" / "dev.json").read_text())
    count = int(sys.argv[1]) if len(sys.argv) > 1 else len(dev["instances"])
    rows = dev["instances"][:count]
    instances = [env.make(r["seed"], dev["T"]) for r in rows]
    start = time.perf_counter()
    result = env.run(policy, instances)
    opt = np.array([r["offline_opt"] for r in rows])
    scales = np.array([inst.scale_s for inst in instances])
    regret = env.normalised_regret(opt, result, scales)
    for r, value, left in zip(rows, regret, result.leftover.sum(axis=1)):
        print(f"seed {r['seed']}: regret/s {value:8.2f}   unused budget {left:7.1f}")
    se = regret.std(ddof=1) / np.sqrt(len(regret)) if len(regret) > 1 else 0.0
    print(f"mean regret/s: {regret.mean():.2f} +- {se:.2f} (s.e.)   "
          f"policy time {result.policy_seconds:.1f}s, total {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
