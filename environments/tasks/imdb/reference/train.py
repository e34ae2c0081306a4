"""Reference solution for imdb: negation scope and contrast marking, tf-idf n-grams.

A plain bag of words cannot tell "good" from "not good", and weighs a reviewer's closing
"but it was dull" like any other sentence. Here every word after a negation cue, up to the end
of its sentence, is rewritten as NOT_<word>; every word of a sentence that opens with a
contrast ("but", "however", "still", "yet", "in the end") is also emitted as C_<word>, so the
model can give the last word more weight; then tf-idf over words and word pairs and a
logistic regression whose regularisation is picked on a validation split.
"""

from __future__ import annotations

import csv
import re

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

SEED = 0
NEGATIONS = {"not", "no", "never", "hardly", "barely", "nor", "without", "nothing"}
CONTRASTS = ("but ", "however ", "still ", "yet ", "in the end ", "although ")


def mark(text: str) -> str:
    sentences = []
    for sentence in re.split(r"\s*[.!?;]\s*", text.lower()):
        sentence = re.sub(r"\bfar from\b", "not", sentence).replace("n't", " not")
        contrast = sentence.startswith(CONTRASTS)
        negated, words = False, []
        for word in sentence.split():
            if word in NEGATIONS:
                negated = True
                continue
            word = f"NOT_{word}" if negated else word
            words.append(word)
            if contrast:
                words.append(f"C_{word}")
        sentences.append(" ".join(words))
    return " . ".join(sentences)


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


train_rows = read("train.csv")
test_rows = read("test.csv")
texts = [mark(r["text"]) for r in train_rows]
labels = np.array([int(r["label"]) for r in train_rows])
test_texts = [mark(r["text"]) for r in test_rows]


def vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"[^\s.]+", sublinear_tf=True,
                           lowercase=False)


fit_t, val_t, y_fit, y_val = train_test_split(texts, labels, test_size=0.2, random_state=SEED)
vec = vectorizer()
x_fit, x_val = vec.fit_transform(fit_t), vec.transform(val_t)
scores = {c: LogisticRegression(C=c, max_iter=3000).fit(x_fit, y_fit).score(x_val, y_val)
          for c in (1.0, 3.0, 10.0, 30.0)}
best_c = max(scores, key=scores.get)
print(f"validation accuracy {scores[best_c]:.3f} at C={best_c}")

vec = vectorizer()
x = vec.fit_transform(texts)
model = LogisticRegression(C=best_c, max_iter=3000).fit(x, labels)
predictions = model.predict(vec.transform(test_texts))
with open("submission.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["id", "label"])
    writer.writerows([r["id"], int(p)] for r, p in zip(test_rows, predictions))
print(f"wrote submission.csv with {len(predictions)} predictions")
