"""Generate the spaceship-titanic task's data: passengers of a seeded synthetic voyage.

Passengers travel in groups (PassengerId ``gggg_pp``); members of a group share a home planet,
usually a cabin and a surname, and a hidden group factor that moves their outcome together.
Whether a passenger was ``Transported`` depends on cryosleep, cabin deck, side and number band,
home planet, age and spending, plus that group factor and noise. Every column has a few
missing values.

The split is by group: no group has members on both sides, so a model cannot read a test
passenger's outcome off a travelling companion in the training set (the leakage a random row
split would allow).

The private passengers fall in three splits (environments/task/splits.py), whole groups each:
``test``, the 1,050 groups the task has always scored (a seeded 35% of groups 1-3000), and
``search`` and ``select``, 525 groups each, the next groups the same generator makes (groups
3001-4050, the two interleaved by a seeded draw), so the train and test passengers, and the
recorded baseline, are those of the task before the splits.

Writes (current directory = the task copy's ``scripts/``):
  ../env/train.csv     PassengerId, features..., Transported
  ../env/test.csv      PassengerId, features...          (all three splits' passengers)
  answers.csv          PassengerId,Transported   (private, test; read by eval.py)
  search_answers.csv   PassengerId,Transported   (private, search)
  select_answers.csv   PassengerId,Transported   (private, select)
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

SEED = 2_912
N_GROUPS = 3000
TEST_FRACTION = 0.35
N_SEARCH_GROUPS = N_SELECT_GROUPS = 525
ANSWERS = {"test": "answers.csv", "search": "search_answers.csv",
           "select": "select_answers.csv"}
MISSING = 0.02
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"

PLANETS = ["Earth", "Europa", "Mars"]
DESTINATIONS = ["TRAPPIST-1e", "PSO J318.5-22", "55 Cancri e"]
DECKS = ["A", "B", "C", "D", "E", "F", "G", "T"]
DECK_EFFECT = {"A": 0.3, "B": 1.8, "C": 1.5, "D": -0.3, "E": -0.9, "F": 0.0, "G": -0.3, "T": -1.5}
PLANET_EFFECT = {"Earth": -0.4, "Europa": 0.6, "Mars": 0.0}
DEST_EFFECT = {"TRAPPIST-1e": -0.1, "PSO J318.5-22": 0.0, "55 Cancri e": 0.4}
SPEND = ["RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck"]
SPEND_EFFECT = {"RoomService": -0.2, "FoodCourt": 0.1, "ShoppingMall": 0.1, "Spa": -0.25,
                "VRDeck": -0.25}
FIRST = ["Ava", "Bo", "Cyra", "Dax", "Eli", "Fenn", "Gia", "Hux", "Ira", "Jun", "Kai", "Lio",
         "Mira", "Nox", "Oren", "Pia", "Quin", "Rhea", "Sol", "Tova", "Uma", "Vex", "Wren",
         "Yael", "Zed"]
LAST = ["Arcturus", "Bellweather", "Corvin", "Dumont", "Eskar", "Falloway", "Grelle",
        "Holloran", "Ibsen", "Jarrow", "Kestrel", "Lanning", "Morrow", "Nadir", "Ostrand",
        "Pellam", "Quarry", "Rask", "Sorrel", "Thane", "Ulric", "Vance", "Wexley", "Yarrow"]

COLUMNS = ["PassengerId", "HomePlanet", "CryoSleep", "Cabin", "Destination", "Age", "VIP",
           *SPEND, "Name"]


def generate(rng: np.random.Generator, groups: range) -> list[dict]:
    people = []
    for g in groups:
        size = int(rng.choice(np.arange(1, 9), p=[.55, .2, .1, .06, .04, .02, .02, .01]))
        planet = str(rng.choice(PLANETS, p=[0.53, 0.25, 0.22]))
        deck_p = {"Earth": [0, 0, 0, .05, .15, .4, .4, 0], "Europa": [.2, .3, .3, .1, .1, 0, 0, 0],
                  "Mars": [0, 0, 0, .2, .2, .5, .1, 0]}[planet]
        if rng.random() < 0.003:
            deck_p = [0, 0, 0, 0, 0, 0, 0, 1.0]
        deck = str(rng.choice(DECKS, p=deck_p))
        side = str(rng.choice(["P", "S"]))
        num = int(rng.integers(0, 1900))
        surname = str(rng.choice(LAST))
        group_factor = rng.normal(0, 0.8)
        dest = str(rng.choice(DESTINATIONS, p=[0.68, 0.1, 0.22]))
        for m in range(1, size + 1):
            age = float(np.clip(np.round(rng.gamma(5.0, 6.0) if rng.random() > 0.1
                                         else rng.uniform(0, 13)), 0, 79))
            cryo = bool(rng.random() < (0.45 if planet == "Europa" else 0.3))
            vip = bool(rng.random() < (0.06 if planet == "Europa" else 0.015))
            spend = {}
            for s in SPEND:
                if cryo or age < 13 or rng.random() < 0.35:
                    spend[s] = 0.0
                else:
                    scale = 600 if vip else (300 if planet == "Europa" else 150)
                    spend[s] = float(np.round(rng.exponential(scale) * rng.lognormal(0, 0.8)))
            cabin_deck, cabin_side, cabin_num = deck, side, num
            if rng.random() < 0.25:  # some members lodge elsewhere
                cabin_side = str(rng.choice(["P", "S"]))
                cabin_num = int(rng.integers(0, 1900))
            num_band = 1.0 * np.sin(cabin_num / 300.0)
            logit = (
                (2.2 if cryo else 0.0)
                + DECK_EFFECT[cabin_deck] + (0.9 if cabin_side == "S" else -0.6) + num_band
                + PLANET_EFFECT[planet] + DEST_EFFECT[dest]
                + (0.8 if age < 13 else (0.3 if age < 19 else 0.0))
                + sum(SPEND_EFFECT[s] * np.log1p(spend[s]) for s in SPEND)
                + 0.8 + group_factor
            )
            transported = bool(rng.random() < 1 / (1 + np.exp(-1.5 * logit)))
            people.append({
                "group": g,
                "PassengerId": f"{g:04d}_{m:02d}",
                "HomePlanet": planet, "CryoSleep": cryo,
                "Cabin": f"{cabin_deck}/{cabin_num}/{cabin_side}",
                "Destination": dest, "Age": age, "VIP": vip, **spend,
                "Name": f"{rng.choice(FIRST)} {surname}",
                "Transported": transported,
            })
    for p in people:  # blank out a few values everywhere, as in a real manifest
        for c in COLUMNS[1:]:
            if rng.random() < MISSING:
                p[c] = ""
    return people


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def write(path: Path, rows: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow([_fmt(r[c]) for c in columns])


def main() -> None:
    rng = np.random.default_rng(SEED)
    people = generate(rng, range(1, N_GROUPS + 1))
    test_groups = set(rng.permutation(N_GROUPS)[: int(TEST_FRACTION * N_GROUPS)] + 1)
    train = [p for p in people if p["group"] not in test_groups]
    test = [p for p in people if p["group"] in test_groups]
    # the search and select groups are the generator's last: the passengers above are byte for
    # byte those of the task before it had splits
    n_more = N_SEARCH_GROUPS + N_SELECT_GROUPS
    more = generate(rng, range(N_GROUPS + 1, N_GROUPS + n_more + 1))
    search_groups = set(rng.permutation(n_more)[:N_SEARCH_GROUPS] + N_GROUPS + 1)
    splits = {"test": test, "search": [p for p in more if p["group"] in search_groups],
              "select": [p for p in more if p["group"] not in search_groups]}
    ENV.mkdir(parents=True, exist_ok=True)
    write(ENV / "train.csv", train, [*COLUMNS, "Transported"])
    write(ENV / "test.csv", test + more, COLUMNS)
    for split, members in splits.items():
        write(HERE / ANSWERS[split], members, ["PassengerId", "Transported"])
    print(f"spaceship-titanic: {len(train)} train and {len(test) + len(more)} held-out passengers "
          f"({', '.join(f'{s} {len(m)}' for s, m in splits.items())}) in {ENV}")


if __name__ == "__main__":
    main()
