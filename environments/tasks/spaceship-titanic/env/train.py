"""Predict which passengers were transported: logistic regression on the numeric columns.

train.csv has the passenger manifest and the Transported label; test.csv has the same columns
without it. Writes submission.csv (PassengerId,Transported) for the test passengers.
"""

from __future__ import annotations

import csv

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

SEED = 0
FEATURES = ["Age", "RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck"]


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def matrix(rows: list[dict[str, str]]) -> np.ndarray:
    # a missing value becomes 0
    return np.array([[float(r[f]) if r[f] != "" else 0.0 for f in FEATURES] for r in rows])


train_rows = read("train.csv")
test_rows = read("test.csv")
x = matrix(train_rows)
y = np.array([r["Transported"] == "True" for r in train_rows])
x_test = matrix(test_rows)

x_fit, x_val, y_fit, y_val = train_test_split(x, y, test_size=0.2, random_state=SEED)
model = LogisticRegression(max_iter=1000)
model.fit(x_fit, y_fit)
print(f"validation accuracy: {model.score(x_val, y_val):.3f}")

model.fit(x, y)
predictions = model.predict(x_test)
with open("submission.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["PassengerId", "Transported"])
    for row, p in zip(test_rows, predictions):
        writer.writerow([row["PassengerId"], "True" if p else "False"])
print(f"wrote submission.csv with {len(predictions)} predictions")
