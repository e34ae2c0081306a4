"""Task folders shaped like MLAgentBench's ``benchmarks/<task>/``, written by the tests.

Each builder writes a folder with MLAgentBench's file names and CSV columns (``env/train.py``,
``env/train.csv``, ``scripts/eval.py``, ``scripts/answer.csv``, ...) and small synthetic data;
every text is this file's own (no MLAgentBench file is copied). The research problems and
``eval.py`` files carry the markers by which ``environments/task/mlagentbench.py`` recognises
MLAgentBench's tasks (the file names, column and function names the real files use), so a
folder built here is recognised whatever it is called.

Like MLAgentBench's, the starters of house-price and spaceship-titanic are deliberately
incomplete (they end in ``NameError: train_mae`` / ``train_accuracy``); amp-parkinsons' runs,
and its ``eval.py`` imports ``smapep1`` from the task's ``env/train.py`` (``../env`` beside
``scripts/``).

API: ``make_house_price(root)``, ``make_spaceship_titanic(root)``, ``make_amp_parkinsons(root)``
each return ``root`` (the task folder, created). With ``prepared=False`` the data is not
written directly: ``scripts/prepare.py`` writes it (run from ``scripts/``, as MLAgentBench runs
its prepare scripts), a stand-in for MLAgentBench's Kaggle download. ``FIXED_STARTER`` holds,
per task, a ``train.py`` body that completes the starter (an improved workspace).
"""

from __future__ import annotations

import csv
import io
import random
import textwrap
from pathlib import Path

# --- house-price (Kaggle "home-data-for-ml-course") --------------------------------------------

HOUSE_FEATURES = ["MSSubClass", "LotArea", "OverallQual", "OverallCond", "YearBuilt",
                  "YearRemodAdd", "1stFlrSF", "2ndFlrSF", "LowQualFinSF", "GrLivArea", "FullBath",
                  "HalfBath", "BedroomAbvGr", "KitchenAbvGr", "TotRmsAbvGrd", "Fireplaces",
                  "WoodDeckSF", "OpenPorchSF", "EnclosedPorch", "3SsnPorch", "ScreenPorch",
                  "PoolArea", "MiscVal", "MoSold", "YrSold"]

HOUSE_PROBLEM = """\
Read data_description.txt to learn what each feature of the houses means. Then complete the
train.py script so that it trains a model predicting the sale price, try other models or
features, and keep the best one. Do not read csv files directly; run your changes.
"""

HOUSE_EVAL = '''\
import os
import pandas as pd

def get_score(submission_folder="../env"):
    predicted = pd.read_csv(os.path.join(submission_folder, "submission.csv"))
    truth = pd.read_csv(os.path.join(os.path.dirname(__file__), "answer.csv"))
    return float((predicted["SalePrice"] - truth["SalePrice"]).abs().mean())

if __name__ == "__main__":
    print(get_score())
'''

HOUSE_TRAIN = '''\
import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import train_test_split

home = pd.read_csv("train.csv")
y = home.SalePrice
features = {features!r}
X = home[features]
train_X, valid_X, train_y, valid_y = train_test_split(X, y, random_state=1)

# ------------------------------------------------------------------
# Train a model here; set model, train_mae and valid_mae.
# ------------------------------------------------------------------

print("Train MAE: {{:,.0f}}".format(train_mae))
print("Validation MAE: {{:,.0f}}".format(valid_mae))
test = pd.read_csv("test.csv")
pd.DataFrame({{"Id": test.Id, "SalePrice": model.predict(test[features])}}).to_csv(
    "submission.csv", index=False)
'''

HOUSE_FIX = '''\
model = RandomForestRegressor(n_estimators=20, random_state=1).fit(train_X, train_y)
train_mae = mean_absolute_error(train_y, model.predict(train_X))
valid_mae = mean_absolute_error(valid_y, model.predict(valid_X))
'''


def _house_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(1, n + 1):
        r = {f: rng.randint(1, 10) for f in HOUSE_FEATURES}
        r.update(LotArea=rng.randint(2000, 20000), GrLivArea=rng.randint(500, 4000),
                 YearBuilt=rng.randint(1900, 2010))
        r["YearRemodAdd"], r["YrSold"] = r["YearBuilt"] + rng.randint(0, 10), rng.randint(2006, 2010)
        price = 20 * r["GrLivArea"] + 15000 * r["OverallQual"] + 500 * (r["YearBuilt"] - 1900)
        rows.append({"Id": i, **r, "SalePrice": int(price + rng.gauss(0, 10000))})
    return rows


def _house_files(rng: random.Random) -> dict[str, str]:
    rows = _house_rows(200, rng)
    train, test = rows[:160], rows[160:]
    return {
        "env/train.csv": _csv(train),
        "env/test.csv": _csv([{k: v for k, v in r.items() if k != "SalePrice"} for r in test]),
        "scripts/answer.csv": _csv([{"Id": r["Id"], "SalePrice": r["SalePrice"]} for r in test]),
    }


def make_house_price(root: Path, *, prepared: bool = True, seed: int = 0) -> Path:
    """An MLAgentBench-shaped house-price folder at ``root``."""
    return _write(root, {
        "env/train.py": HOUSE_TRAIN.format(features=HOUSE_FEATURES),
        "env/data_description.txt": "".join(f"{f}: a number\n" for f in HOUSE_FEATURES),
        "scripts/research_problem.txt": HOUSE_PROBLEM,
        "scripts/eval.py": HOUSE_EVAL,
        "scripts/read_only_files.txt": "./train.csv\n./test.csv",
    }, _house_files(random.Random(seed)), prepared)


# --- spaceship-titanic ------------------------------------------------------------------------

SPACESHIP_COLUMNS = ["PassengerId", "HomePlanet", "CryoSleep", "Cabin", "Destination", "Age",
                     "VIP", "RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck", "Name",
                     "Transported"]

SPACESHIP_PROBLEM = """\
Read task_descriptor.txt to learn the task and the dataset. Then complete the train.py
script to train a model, try other models or features, and keep the best one. Do not read
csv files directly; run your changes.
"""

SPACESHIP_EVAL = '''\
import os
import pandas as pd

def get_score(submission_folder="../env"):
    predicted = pd.read_csv(os.path.join(submission_folder, "submission.csv"))
    truth = pd.read_csv(os.path.join(os.path.dirname(__file__), "answer.csv"))
    return float((predicted["Transported"] == truth["Transported"]).sum() / len(predicted))

if __name__ == "__main__":
    print(get_score())
'''

SPACESHIP_TRAIN = '''\
import pandas as pd
from sklearn.linear_model import LogisticRegression

df = pd.read_csv("train.csv").sample(frac=1, random_state=1)
cut = int(0.8 * len(df))
train_data, val_data = df[:cut], df[cut:]
columns = ["HomePlanet", "CryoSleep", "Destination", "VIP"]
X = pd.get_dummies(train_data[columns].astype(str))
X_val = pd.get_dummies(val_data[columns].astype(str)).reindex(columns=X.columns, fill_value=0)
y, y_val = train_data["Transported"], val_data["Transported"]

# ------------------------------------------------------------------
# Train a model here; set model, train_accuracy and val_accuracy.
# ------------------------------------------------------------------

print(f"Train Accuracy: {train_accuracy}")
print(f"Validation Accuracy: {val_accuracy}")
test = pd.read_csv("test.csv")
X_test = pd.get_dummies(test[columns].astype(str)).reindex(columns=X.columns, fill_value=0)
pd.DataFrame({"PassengerId": test.PassengerId, "Transported": model.predict(X_test)}).to_csv(
    "submission.csv", index=False)
'''

SPACESHIP_FIX = '''\
model = LogisticRegression().fit(X, y)
train_accuracy = model.score(X, y)
val_accuracy = model.score(X_val, y_val)
'''


def _spaceship_files(rng: random.Random) -> dict[str, str]:
    rows = []
    for i in range(300):
        cryo = rng.random() < 0.4
        planet = rng.choice(["Earth", "Europa", "Mars"])
        spend = [0 if cryo else rng.randint(0, 2000) for _ in range(5)]
        transported = cryo or (planet == "Europa" and rng.random() < 0.7) or rng.random() < 0.1
        rows.append({
            "PassengerId": f"{i:04d}_01", "HomePlanet": planet, "CryoSleep": cryo,
            "Cabin": f"{rng.choice('ABCDEFG')}/{i}/{rng.choice('PS')}",
            "Destination": rng.choice(["TRAPPIST-1e", "55 Cancri e", "PSO J318.5-22"]),
            "Age": rng.randint(1, 80), "VIP": rng.random() < 0.05,
            **dict(zip(SPACESHIP_COLUMNS[7:12], spend)), "Name": f"Person {i}",
            "Transported": transported,
        })
    train, test = rows[:240], rows[240:]
    return {
        "env/train.csv": _csv(train),
        "env/test.csv": _csv([{k: v for k, v in r.items() if k != "Transported"} for r in test]),
        "scripts/answer.csv": _csv([{"PassengerId": r["PassengerId"],
                                     "Transported": r["Transported"]} for r in test]),
    }


def make_spaceship_titanic(root: Path, *, prepared: bool = True, seed: int = 0) -> Path:
    """An MLAgentBench-shaped spaceship-titanic folder at ``root``."""
    return _write(root, {
        "env/train.py": SPACESHIP_TRAIN,
        "env/task_descriptor.txt": "Predict whether a passenger was Transported.\n",
        "scripts/research_problem.txt": SPACESHIP_PROBLEM,
        "scripts/eval.py": SPACESHIP_EVAL,
        "scripts/read_only_files.txt": "./train.csv\n./test.csv",
        # these scripts import nothing beyond labcoat's install; the folder says so, which
        # wins over the MLAgentBench table's requirements (seaborn, datasets: a download)
        "scripts/requirements.txt": "",
    }, _spaceship_files(random.Random(seed)), prepared)


# --- amp-parkinsons-disease-progression-prediction ---------------------------------------------

AMP_PROBLEM = """\
Read data_description.txt to learn the data and the task. Then complete the train.py script
to train a model, try other models or features (for SMAPE score the lower is better), and
submit the predictions of your best model for the test set as a submission.csv as described
in evaluation_details.txt. Do not read csv files directly; run your changes.
"""

# like MLAgentBench's, the metric lives in the task's env/train.py and eval.py imports it
AMP_EVAL = '''\
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../env"))
import pandas as pd
from train import smapep1

def get_score(submission_folder="../env"):
    truth = pd.read_csv(os.path.join(os.path.dirname(__file__), "answer.csv"))
    predicted = pd.read_csv(os.path.join(submission_folder, "submission.csv"))
    return float(smapep1(truth["rating"], predicted["rating"]))

if __name__ == "__main__":
    print(get_score())
'''

AMP_TRAIN = '''\
import numpy as np
import pandas as pd
from sklearn.utils import check_consistent_length


def smapep1(y_true, y_pred):
    """SMAPE of y+1 in percent (0 is perfect); missing truths are skipped."""
    check_consistent_length(y_true, y_pred)
    y_true, y_pred = np.asarray(y_true, float).ravel(), np.asarray(y_pred, float).ravel()
    keep = np.isfinite(y_true)
    y_true, y_pred = y_true[keep], y_pred[keep]
    return float(np.mean(np.abs(y_pred - y_true) / ((y_true + y_pred) / 2 + 1)) * 100)


if __name__ == "__main__":
    clinical = pd.concat([pd.read_csv("train_clinical_data.csv"),
                          pd.read_csv("supplemental_clinical_data.csv")])
    medians = {u: clinical[u].median() for u in ["updrs_1", "updrs_2", "updrs_3", "updrs_4"]}
    sub = pd.read_csv("example_test_files/sample_submission.csv")
    # prediction_id: <patient>_<month>_updrs_<k>_plus_<wait>_months
    sub["rating"] = [medians["updrs_" + p.split("_")[3]] for p in sub.prediction_id]
    sub[["prediction_id", "rating"]].to_csv("submission.csv", index=False)
'''


def _amp_files(rng: random.Random) -> dict[str, str]:
    clinical, proteins, peptides = [], [], []
    for patient in range(10, 22):
        for month in (0, 6, 12, 24):
            visit = f"{patient}_{month}"
            clinical.append({"visit_id": visit, "patient_id": patient, "visit_month": month,
                             **{f"updrs_{k}": rng.randint(0, 30) for k in range(1, 5)},
                             "upd23b_clinical_state_on_medication": rng.choice(["On", "Off", ""])})
            proteins.append({"visit_id": visit, "visit_month": month, "patient_id": patient,
                             "UniProt": "O00391", "NPX": round(rng.uniform(1e4, 1e5), 1)})
            peptides.append({"visit_id": visit, "visit_month": month, "patient_id": patient,
                             "UniProt": "O00391", "Peptide": "NEQEQPLGQWHLS",
                             "PeptideAbundance": round(rng.uniform(1e4, 1e5), 1)})
    test_patients = {20, 21}
    train = [r for r in clinical if r["patient_id"] not in test_patients]
    test_visits = [r for r in clinical if r["patient_id"] in test_patients and r["visit_month"] == 0]
    answer = [{"prediction_id": f"{r['patient_id']}_0_updrs_{k}_plus_{wait}_months",
               "rating": next(c[f"updrs_{k}"] for c in clinical if c["visit_id"]
                              == f"{r['patient_id']}_{wait}"), "visit_month": 0}
              for r in test_visits for k in range(1, 5) for wait in (0, 6, 12, 24)]
    return {
        "env/train_clinical_data.csv": _csv(train[: len(train) // 2]),
        "env/supplemental_clinical_data.csv": _csv(train[len(train) // 2:]),
        "env/train_proteins.csv": _csv([r for r in proteins if r["patient_id"] not in test_patients]),
        "env/train_peptides.csv": _csv([r for r in peptides if r["patient_id"] not in test_patients]),
        "env/example_test_files/test.csv": _csv([
            {"visit_id": r["visit_id"], "patient_id": r["patient_id"], "visit_month": 0,
             "row_id": f"{r['visit_id']}_updrs_{k}", "updrs_test": f"updrs_{k}"}
            for r in test_visits for k in range(1, 5)]),
        "env/example_test_files/sample_submission.csv": _csv([{**a, "rating": 0} for a in answer]),
        "scripts/answer.csv": _csv(answer),
    }


def make_amp_parkinsons(root: Path, *, prepared: bool = True, seed: int = 0) -> Path:
    """An MLAgentBench-shaped amp-parkinsons-disease-progression-prediction folder at ``root``."""
    return _write(root, {
        "env/train.py": AMP_TRAIN,
        "env/data_description.txt": "Clinical visits (updrs_1..4), proteins and peptides.\n",
        "env/evaluation_details.txt": "Submissions are scored on SMAPE; write submission.csv.\n",
        "scripts/research_problem.txt": AMP_PROBLEM,
        "scripts/eval.py": AMP_EVAL,
        "scripts/read_only_files.txt": ("example_test_files/*\n./supplemental_clinical_data.csv\n"
                                        "./train_clinical_data.csv\n./train_peptides.csv\n"
                                        "./train_proteins.csv"),
    }, _amp_files(random.Random(seed)), prepared)


FIXED_STARTER = {
    "house-price": HOUSE_TRAIN.format(features=HOUSE_FEATURES).replace(
        "# Train a model here; set model, train_mae and valid_mae.\n", HOUSE_FIX),
    "spaceship-titanic": SPACESHIP_TRAIN.replace(
        "# Train a model here; set model, train_accuracy and val_accuracy.\n", SPACESHIP_FIX),
}


# --- writing ------------------------------------------------------------------------------------

def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _prepare_script(data: dict[str, str]) -> str:
    """A ``scripts/prepare.py`` that writes ``data`` (paths relative to the task folder) from
    ``scripts/``, the folder MLAgentBench runs it in."""
    return textwrap.dedent(f"""\
        import os
        DATA = {data!r}
        for rel, text in DATA.items():
            path = os.path.join("..", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
        """)


def _write(root: Path, files: dict[str, str], data: dict[str, str], prepared: bool) -> Path:
    root = Path(root)
    everything = {**files, **data} if prepared else {**files, "scripts/prepare.py": _prepare_script(data)}
    for rel, text in everything.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root
