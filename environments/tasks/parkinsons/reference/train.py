"""Reference solution for parkinsons: forecast each patient from their own history.

For every training patient the test situation is replayed: the visits at months 0, 6 and 12
(scores, medication) and the protein panel are the features, the horizon (18, 24 or 36) is a
feature too, and the score at that month is the target. One gradient-boosting model per score,
with an absolute-error loss (SMAPE rewards the median, not the mean); predictions are clipped
at zero, and motor-complication forecasts under 0.5 are set to exactly 0 (SMAPE punishes any
non-zero forecast of a zero rating with its maximum).
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict

os.environ["OMP_NUM_THREADS"] = "1"  # one thread: the box is shared

# ruff: noqa: E402

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

SEED = 0
HISTORY = (0, 6, 12)
PARTS = (1, 2, 3, 4)


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def by_patient(rows: list[dict[str, str]]) -> dict[str, dict[int, dict[str, str]]]:
    visits: dict[str, dict[int, dict[str, str]]] = defaultdict(dict)
    for r in rows:
        visits[r["patient_id"]][int(r["visit_month"])] = r
    return visits


proteins = {r["patient_id"]: [float(v) for k, v in r.items() if k != "patient_id"]
            for r in read("proteins.csv")}


def features(visits: dict[int, dict[str, str]], patient: str, month: int) -> list[float]:
    scores = np.array([[float(visits[m][f"updrs_{p}"]) for p in PARTS] for m in HISTORY])
    slope = (scores[-1] - scores[0]) / (HISTORY[-1] - HISTORY[0])
    medication = [float(visits[m]["on_medication"]) for m in HISTORY]
    return [*scores.ravel(), *slope, *medication, *proteins[patient], float(month)]


train = by_patient(read("train_clinical.csv"))
test = by_patient(read("test_clinical.csv"))
x, y = [], {p: [] for p in PARTS}
for patient, visits in train.items():
    for month in (18, 24, 36):
        if month in visits and all(m in visits for m in HISTORY):
            x.append(features(visits, patient, month))
            for p in PARTS:
                y[p].append(float(visits[month][f"updrs_{p}"]))
x = np.array(x)

models = {
    p: HistGradientBoostingRegressor(loss="absolute_error", learning_rate=0.05, max_iter=200,
                                     random_state=SEED).fit(x, np.array(y[p]))
    for p in PARTS
}

wanted = [r["prediction_id"] for r in read("sample_submission.csv")]
keys = [w.split("_") for w in wanted]  # patient, month, "updrs", part
x_test = np.array([features(test[patient], patient, int(month)) for patient, month, _, _ in keys])
forecast = {p: models[p].predict(x_test) for p in PARTS}
rows = []
for n, (prediction_id, (_, _, _, part)) in enumerate(zip(wanted, keys)):
    value = max(0.0, float(forecast[int(part)][n]))
    if int(part) == 4 and value < 0.5:
        value = 0.0
    rows.append((prediction_id, round(value, 3)))

with open("submission.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["prediction_id", "rating"])
    writer.writerows(rows)
print(f"wrote submission.csv with {len(rows)} forecasts")
