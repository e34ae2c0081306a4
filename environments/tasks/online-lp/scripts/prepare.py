"""Write the 8 dev instances' hindsight optima to ../env/data/dev.json and the private sets here
(one per private split: search, select, test; disjoint seeds).

Offline and deterministic: instances come from the 'scaled' generator; the optima from HiGHS.
The private seeds, scales and optima go to private.json next to this file, never into env/.
"""

import json
from pathlib import Path

from eval import private_file
from produce import inputs_file

from methods.online_lp.instances import make_instance
from methods.online_lp.offline import solve_offline

T, M, BASE = 128_000, 4, 0.25
DEV_SEEDS = list(range(8))
N_PRIVATE = 24
#: the private splits (environments/task/splits.py): 24 instances each, consecutive blocks of one
#: private seed sequence; test's are the 24 the task scored before it had splits
SPLIT_SEEDS = {split: [4_104_729 + 7919 * i for i in range(k * N_PRIVATE, (k + 1) * N_PRIVATE)]
               for k, split in enumerate(("test", "search", "select"))}
PRIVATE_SEEDS = SPLIT_SEEDS["test"]
PROBE_ROW = 17  # the private row eval re-runs alone to check that rows are independent


def _rows(seeds: list[int], private: bool) -> list[dict]:
    rows = []
    for seed in seeds:
        inst = make_instance("scaled", T, M, seed, BASE)
        sol = solve_offline(inst)
        row = {"seed": seed, "offline_opt": sol.opt, "ystar_lp": sol.ystar.tolist()}
        if private:
            row.update(scale_s=inst.scale_s, u=(inst.d / BASE).tolist())
        rows.append(row)
    return rows


def main() -> None:
    here = Path(__file__).resolve().parent
    data = here.parent / "env" / "data"
    data.mkdir(parents=True, exist_ok=True)
    dev = {"T": T, "m": M, "base_budget": BASE, "instances": _rows(DEV_SEEDS, False)}
    (data / "dev.json").write_text(json.dumps(dev, indent=1))
    (here / "inputs").mkdir(exist_ok=True)
    for split, seeds in SPLIT_SEEDS.items():
        private = {"T": T, "m": M, "base_budget": BASE, "probe_row": PROBE_ROW,
                   "instances": _rows(seeds, True)}
        (here / private_file(split)).write_text(json.dumps(private, indent=1))
        # what the submission phase may see (produce.py): the instances to run, not their optima
        shown = {**private, "instances": [{"seed": r["seed"]} for r in private["instances"]]}
        (here / "inputs" / inputs_file(split)).write_text(json.dumps(shown, indent=1))
    print(f"wrote {len(DEV_SEEDS)} dev and {N_PRIVATE} private instances per split "
          f"({', '.join(SPLIT_SEEDS)})")


if __name__ == "__main__":
    main()
