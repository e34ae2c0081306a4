"""Generate the house-price task's data: a seeded synthetic housing market.

Each house has numeric and categorical attributes, some of them missing, and a sale price that
depends on them through a log-linear model with non-linear terms (quality, size, age),
neighbourhood premiums, interactions, and multiplicative noise.

The private houses fall in three splits (environments/task/splits.py): ``test``, the 800 houses
the task has always scored (Ids 1201-2000), and ``search`` and ``select``, 400 houses each drawn
from the same market after everything else (Ids 2001-2800, the two interleaved by a seeded draw),
so the train and test houses, and the recorded baseline, are those of the task before the splits.

Writes (current directory = the task copy's ``scripts/``):
  ../env/train.csv              Id, features..., SalePrice
  ../env/test.csv               Id, features...            (no prices; all three splits' houses)
  ../env/data_description.txt   what each column means
  answers.csv                   Id,SalePrice               (private, test; read by eval.py)
  search_answers.csv            Id,SalePrice               (private, search)
  select_answers.csv            Id,SalePrice               (private, select)
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

SEED = 31_415
N_TRAIN, N_TEST = 1200, 800
N_SEARCH = N_SELECT = 400
ANSWERS = {"test": "answers.csv", "search": "search_answers.csv",
           "select": "select_answers.csv"}
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"

NEIGHBORHOODS = {  # name: log-price premium
    "NoRidge": 0.45, "StoneBr": 0.40, "NridgHt": 0.35, "Timber": 0.20, "Somerst": 0.15,
    "CollgCr": 0.05, "Gilbert": 0.02, "NAmes": -0.08, "Sawyer": -0.12, "OldTown": -0.22,
    "Edwards": -0.25, "IDOTRR": -0.35, "MeadowV": -0.40, "BrkSide": -0.18,
}
ZONING = {"RL": 0.0, "RM": -0.08, "FV": 0.06, "RH": -0.10, "C (all)": -0.30}
KITCHEN = {"Ex": 0.15, "Gd": 0.05, "TA": 0.0, "Fa": -0.10}
GARAGE = {"Attchd": 0.03, "BuiltIn": 0.06, "Detchd": -0.03}
SALE = {"Normal": 0.0, "Abnorml": -0.15, "Partial": 0.08, "Family": -0.10}

COLUMNS = [
    ("MSZoning", "zoning classification: RL residential low density, RM medium density, "
                 "FV floating village, RH high density, C (all) commercial"),
    ("Neighborhood", "neighbourhood within the city"),
    ("LotArea", "lot size in square feet"),
    ("LotFrontage", "linear feet of street connected to the lot (may be missing)"),
    ("OverallQual", "overall material and finish quality, 1 (very poor) to 10 (excellent)"),
    ("OverallCond", "overall condition, 1 (very poor) to 9 (excellent)"),
    ("YearBuilt", "original construction year"),
    ("YearRemodAdd", "remodel year (same as YearBuilt if never remodelled)"),
    ("MasVnrArea", "masonry veneer area in square feet (may be missing)"),
    ("TotalBsmtSF", "basement area in square feet (0: no basement; may be missing)"),
    ("GrLivArea", "above-ground living area in square feet"),
    ("FullBath", "full bathrooms above ground"),
    ("BedroomAbvGr", "bedrooms above ground"),
    ("KitchenQual", "kitchen quality: Ex excellent, Gd good, TA typical, Fa fair (may be missing)"),
    ("CentralAir", "central air conditioning: Y or N"),
    ("GarageType", "garage location: Attchd, BuiltIn, Detchd; empty when there is no garage"),
    ("GarageCars", "garage size in car capacity (0: no garage)"),
    ("MoSold", "month sold"),
    ("YrSold", "year sold"),
    ("SaleCondition", "Normal, Abnorml (abnormal: trade, foreclosure), Partial (new house), "
                      "Family (sale between relatives)"),
]


def generate(rng: np.random.Generator, n: int) -> tuple[list[dict], np.ndarray]:
    names = list(NEIGHBORHOODS)
    hood = rng.choice(names, size=n, p=np.full(len(names), 1 / len(names)))
    hood_premium = np.array([NEIGHBORHOODS[h] for h in hood])
    # neighbourhood drives quality and size too (richer areas, better houses)
    qual = np.clip(np.round(5.6 + 3.0 * hood_premium + rng.normal(0, 1.3, n)), 1, 10).astype(int)
    cond = np.clip(np.round(rng.normal(5.6, 1.1, n)), 1, 9).astype(int)
    built = np.clip(np.round(1975 + 60 * hood_premium + rng.normal(0, 25, n)), 1880, 2010)
    built = built.astype(int)
    remod = np.where(rng.random(n) < 0.45, built,
                     np.minimum(2010, built + rng.integers(5, 60, n))).astype(int)
    living = np.exp(rng.normal(7.25 + 0.08 * (qual - 6) + 0.3 * hood_premium, 0.28, n))
    living = np.round(np.clip(living, 400, 5000)).astype(int)
    lot = np.round(np.exp(rng.normal(9.1, 0.45, n)) * (1 + 0.3 * (living > 2200))).astype(int)
    frontage = np.round(np.sqrt(lot) * rng.uniform(0.5, 0.9, n)).astype(float)
    bsmt = np.where(rng.random(n) < 0.06, 0.0, np.round(living * rng.uniform(0.5, 1.0, n)))
    masvnr = np.where(rng.random(n) < 0.55, 0.0, np.round(rng.gamma(2.0, 80.0, n) * qual / 6))
    full_bath = np.clip(np.round(living / 900 + rng.normal(0, 0.5, n)), 0, 4).astype(int)
    bedrooms = np.clip(np.round(living / 550 + rng.normal(0, 0.7, n)), 1, 7).astype(int)
    cars = np.clip(np.round(0.3 + 0.25 * (qual - 3) + rng.normal(0, 0.6, n)), 0, 4).astype(int)
    gtype = np.where(cars == 0, "", rng.choice(list(GARAGE), size=n, p=[0.6, 0.1, 0.3]))
    kitchen_p = np.stack([np.clip(0.02 + 0.06 * (qual - 5), 0.01, 0.6),
                          np.clip(0.25 + 0.05 * (qual - 5), 0.05, 0.6)], 1)
    u = rng.random(n)
    kitchen = np.where(u < kitchen_p[:, 0], "Ex",
                       np.where(u < kitchen_p.sum(1), "Gd", np.where(u < 0.93, "TA", "Fa")))
    air = np.where(rng.random(n) < np.clip(0.6 + (built - 1940) / 80, 0.5, 0.99), "Y", "N")
    zoning = rng.choice(list(ZONING), size=n, p=[0.72, 0.15, 0.06, 0.03, 0.04])
    sale = rng.choice(list(SALE), size=n, p=[0.82, 0.07, 0.08, 0.03])
    yr_sold = rng.integers(2006, 2011, n)
    mo_sold = rng.integers(1, 13, n)

    age = yr_sold - built
    log_price = (
        11.9
        + 0.11 * (qual - 5) + 0.012 * (qual - 5) ** 2          # quality, convex
        + 0.55 * np.log(living / 1500)                         # size, diminishing
        + 0.08 * np.log(lot / 9000)
        + hood_premium
        - 0.0035 * age + 0.07 * (remod > built) * (age > 25)   # age, remodels of old houses
        + 0.03 * (cond - 5)
        + 0.08 * np.log1p(bsmt / 500)
        + 0.04 * cars + np.array([GARAGE.get(g, -0.06) for g in gtype])
        + np.array([KITCHEN[k] for k in kitchen])
        + 0.10 * (air == "Y") - 0.10
        + np.array([ZONING[z] for z in zoning])
        + np.array([SALE[s] for s in sale])
        + 0.00015 * masvnr
        + 0.08 * (qual >= 8) * hood_premium                    # luxury in good areas
        + rng.normal(0, 0.09, n)
    )
    price = np.round(np.exp(log_price), -2)

    # missing values, not at random where real data would have them
    frontage[rng.random(n) < 0.18] = np.nan
    masvnr = masvnr.astype(float)
    masvnr[rng.random(n) < 0.05] = np.nan
    bsmt = bsmt.astype(float)
    bsmt[rng.random(n) < 0.03] = np.nan
    kitchen = kitchen.astype(object)
    kitchen[rng.random(n) < 0.02] = ""

    rows = []
    for i in range(n):
        rows.append({
            "MSZoning": zoning[i], "Neighborhood": hood[i], "LotArea": lot[i],
            "LotFrontage": frontage[i], "OverallQual": qual[i], "OverallCond": cond[i],
            "YearBuilt": built[i], "YearRemodAdd": remod[i], "MasVnrArea": masvnr[i],
            "TotalBsmtSF": bsmt[i], "GrLivArea": living[i], "FullBath": full_bath[i],
            "BedroomAbvGr": bedrooms[i], "KitchenQual": kitchen[i], "CentralAir": air[i],
            "GarageType": gtype[i], "GarageCars": cars[i], "MoSold": mo_sold[i],
            "YrSold": yr_sold[i], "SaleCondition": sale[i],
        })
    return rows, price


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else f"{v:g}"
    return str(v)


def write(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows([[_fmt(v) for v in row] for row in rows])


def main() -> None:
    rng = np.random.default_rng(SEED)
    rows, price = generate(rng, N_TRAIN + N_TEST)
    # the search and select houses come last from the same generator: the houses above are
    # byte for byte those of the task before it had splits
    more_rows, more_price = generate(rng, N_SEARCH + N_SELECT)
    rows, price = rows + more_rows, np.concatenate([price, more_price])
    held_out = N_TRAIN + N_TEST + rng.permutation(N_SEARCH + N_SELECT)
    splits = {"test": range(N_TRAIN, N_TRAIN + N_TEST),
              "search": sorted(held_out[:N_SEARCH]), "select": sorted(held_out[N_SEARCH:])}
    ids = np.arange(1, len(rows) + 1)
    features = [name for name, _ in COLUMNS]
    ENV.mkdir(parents=True, exist_ok=True)
    write(ENV / "train.csv", ["Id", *features, "SalePrice"],
          [[ids[i], *(rows[i][f] for f in features), int(price[i])] for i in range(N_TRAIN)])
    write(ENV / "test.csv", ["Id", *features], [[ids[i], *(rows[i][f] for f in features)]
                                                for i in range(N_TRAIN, len(rows))])
    for split, members in splits.items():
        write(HERE / ANSWERS[split], ["Id", "SalePrice"],
              [[ids[i], int(price[i])] for i in members])
    lines = ["Columns of train.csv and test.csv (an empty cell is a missing value).", "",
             "Id: row identifier", *(f"{name}: {text}" for name, text in COLUMNS),
             "SalePrice: sale price in dollars (train.csv only; the target)"]
    (ENV / "data_description.txt").write_text("\n".join(lines) + "\n")
    print(f"house-price: {N_TRAIN} train and {len(rows) - N_TRAIN} held-out houses (test "
          f"{N_TEST}, search {N_SEARCH}, select {N_SELECT}) written to {ENV}")


if __name__ == "__main__":
    main()
