"""Classify film reviews as positive or negative: bag of words + logistic regression.

train.csv has id,text,label (1 positive, 0 negative); test.csv has id,text. Writes
submission.csv (id,label) for the test reviews.
"""

from __future__ import annotations

import csv

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

SEED = 0


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


train_rows = read("train.csv")
test_rows = read("test.csv")
texts = [r["text"] for r in train_rows]
labels = np.array([int(r["label"]) for r in train_rows])

vectorizer = CountVectorizer(binary=True)  # which words occur, order ignored
x = vectorizer.fit_transform(texts)
x_test = vectorizer.transform([r["text"] for r in test_rows])

x_fit, x_val, y_fit, y_val = train_test_split(x, labels, test_size=0.2, random_state=SEED)
model = LogisticRegression(max_iter=1000)
model.fit(x_fit, y_fit)
print(f"validation accuracy: {model.score(x_val, y_val):.3f}")

model.fit(x, labels)
predictions = model.predict(x_test)
with open("submission.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["id", "label"])
    writer.writerows([r["id"], int(p)] for r, p in zip(test_rows, predictions))
print(f"wrote submission.csv with {len(predictions)} predictions")
