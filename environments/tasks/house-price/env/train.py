"""Predict house sale prices: a random forest on a few numeric columns; writes submission.csv.

train.csv has the features and SalePrice; test.csv has the same features without SalePrice.
data_description.txt explains the columns. The score is the mean absolute error of
submission.csv (Id,SalePrice) on the hidden test prices.
"""

from __future__ import annotations

import csv

import numpy as np
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import train_test_split

SEED = 1
FEATURES = [
    "LotArea", "OverallQual", "OverallCond", "YearBuilt", "YearRemodAdd", "GrLivArea",
    "FullBath", "BedroomAbvGr", "GarageCars", "MoSold", "YrSold",
]


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def matrix(rows: list[dict[str, str]]) -> np.ndarray:
    return np.array([[float(row[f]) for f in FEATURES] for row in rows])


train_rows = read("train.csv")
test_rows = read("test.csv")
x = matrix(train_rows)
y = np.array([float(row["SalePrice"]) for row in train_rows])
x_test = matrix(test_rows)

x_fit, x_val, y_fit, y_val = train_test_split(x, y, test_size=0.2, random_state=SEED)
model = RandomForestRegressor(n_estimators=50, max_depth=6, random_state=SEED, n_jobs=1)
model.fit(x_fit, y_fit)
print(f"validation MAE: {mean_absolute_error(y_val, model.predict(x_val)):,.0f}")

model.fit(x, y)
predictions = model.predict(x_test)
with open("submission.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["Id", "SalePrice"])
    for row, price in zip(test_rows, predictions):
        writer.writerow([row["Id"], f"{price:.2f}"])
print(f"wrote submission.csv with {len(predictions)} predictions")
