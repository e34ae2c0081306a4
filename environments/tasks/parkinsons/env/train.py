"""Forecast disease-progression scores: for each score and month, the training patients' median.

train_clinical.csv has the full visit records of the training patients; test_clinical.csv has
the test patients' visits at months 0, 6 and 12; proteins.csv has every patient's first-visit
protein panel. sample_submission.csv lists the ratings to forecast: prediction_id
"<patient>_<month>_updrs_<part>". Writes submission.csv (prediction_id,rating).
"""

from __future__ import annotations

import csv
from collections import defaultdict

import numpy as np


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


train = read("train_clinical.csv")
wanted = [r["prediction_id"] for r in read("sample_submission.csv")]

# population median of each score at each visit month
values: dict[tuple[int, int], list[float]] = defaultdict(list)
for r in train:
    for part in range(1, 5):
        values[(part, int(r["visit_month"]))].append(float(r[f"updrs_{part}"]))
median = {key: float(np.median(v)) for key, v in values.items()}

rows = []
for prediction_id in wanted:
    patient, month, _, part = prediction_id.split("_")
    rows.append((prediction_id, median[(int(part), int(month))]))

with open("submission.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["prediction_id", "rating"])
    writer.writerows(rows)
print(f"wrote submission.csv with {len(rows)} forecasts")
