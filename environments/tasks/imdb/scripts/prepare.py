"""Generate the imdb task's data: seeded synthetic film reviews with real linguistic structure.

A review is a handful of sentences about a film of some genre. Some sentences carry an opinion
("the acting was very good", "I did not find it boring", "never once dull"), and a sentence that
opens with a contrast ("but", "however", "still") weighs more, as the reviewer's last word.
Negation flips a sentiment word's polarity and intensifiers strengthen it. Topic words (genre,
cast, plot) and filler carry no sentiment, and a few labels are flipped as noise. The label is
the sign of the weighted opinion.

The private reviews fall in three splits (environments/task/splits.py): ``test``, the 2,000
reviews the task has always scored (ids 4000-5999), and ``search`` and ``select``, 1,000 each,
the next reviews the same generator writes (ids 6000-7999, the two interleaved by a seeded
draw), so the train and test reviews, and the recorded baseline, are those of the task before
the splits.

Writes (current directory = the task copy's ``scripts/``):
  ../env/train.csv     id,text,label      (label: 1 positive, 0 negative)
  ../env/test.csv      id,text            (all three splits' reviews)
  answers.csv          id,label           (private, test; read by eval.py)
  search_answers.csv   id,label           (private, search)
  select_answers.csv   id,label           (private, select)
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

SEED = 4_242
N_TRAIN, N_TEST = 4000, 2000
N_SEARCH = N_SELECT = 1000
ANSWERS = {"test": "answers.csv", "search": "search_answers.csv",
           "select": "select_answers.csv"}
LABEL_NOISE = 0.03
NEGATION_RATE = 0.25
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"

POSITIVE = ["good", "great", "excellent", "wonderful", "brilliant", "moving", "gripping",
            "charming", "superb", "memorable", "delightful", "clever", "engaging", "funny",
            "beautiful", "powerful", "satisfying", "fresh"]
NEGATIVE = ["bad", "awful", "terrible", "boring", "dull", "clumsy", "tedious", "forgettable",
            "bland", "weak", "predictable", "messy", "shallow", "annoying", "lifeless",
            "painful", "flat", "stale"]
NEGATORS = ["not", "never", "hardly", "not at all", "far from"]
INTENSIFIERS = ["very", "really", "truly", "incredibly", "quite", "remarkably"]
CONTRASTS = ["but", "however", "still", "yet", "in the end"]
GENRES = {
    "horror": ["ghost", "haunted", "scream", "blood", "cabin", "curse", "shadow"],
    "comedy": ["jokes", "slapstick", "sitcom", "punchline", "prank", "laughs"],
    "drama": ["family", "grief", "courtroom", "marriage", "memory", "letters"],
    "scifi": ["spaceship", "robot", "planet", "alien", "time travel", "android"],
    "western": ["sheriff", "saloon", "desert", "outlaw", "horses", "frontier"],
}
ASPECTS = ["the acting", "the script", "the plot", "the pacing", "the soundtrack",
           "the direction", "the ending", "the dialogue", "the cinematography", "the cast",
           "the story", "the finale", "this film", "the movie", "the lead"]
NAMES = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Alvarez", "Novak", "Brennan", "Haddad",
         "Kowalski", "Iyer", "Castillo", "Duarte"]
OPINION_TEMPLATES = [
    "{aspect} was {phrase}", "{aspect} felt {phrase}", "i found {aspect} {phrase}",
    "overall it was {phrase}", "{aspect} is {phrase}", "honestly {aspect} seemed {phrase}",
    "the whole thing was {phrase}",
]
FILLER_TEMPLATES = [
    "i watched it on a rainy {day} with {who}", "it runs about {minutes} minutes",
    "the film is set in a {place} full of {topic}", "{name} plays the {role}",
    "there is a long scene with {topic} and {topic2}", "it is a {genre} film about {topic}",
    "the trailer promised {topic} and {topic2}", "{name} directed it after a long break",
    "i saw it at the {venue}", "it was released last {season}",
]
FILL = {
    "day": ["sunday", "monday", "evening", "afternoon"],
    "who": ["my brother", "friends", "my parents", "nobody", "my partner"],
    "minutes": ["ninety", "two hundred", "one hundred and ten", "eighty"],
    "place": ["town", "city", "village", "station", "ship"],
    "role": ["detective", "mother", "villain", "stranger", "captain", "teacher"],
    "venue": ["cinema", "festival", "drive in", "library screening"],
    "season": ["spring", "summer", "autumn", "winter"],
}


def opinion(rng: random.Random) -> tuple[str, float]:
    """One opinion phrase and its signed weight."""
    polarity = 1.0 if rng.random() < 0.5 else -1.0
    word = rng.choice(POSITIVE if polarity > 0 else NEGATIVE)
    weight = 1.0
    words = [word]
    if rng.random() < 0.35:
        words.insert(0, rng.choice(INTENSIFIERS))
        weight = 1.6
    if rng.random() < NEGATION_RATE:
        words.insert(0, rng.choice(NEGATORS))
        polarity = -polarity
        weight *= 0.8
    return " ".join(words), polarity * weight


def review(rng: random.Random) -> tuple[str, float]:
    genre = rng.choice(list(GENRES))
    topics = GENRES[genre]
    sentences, score = [], 0.0
    for k in range(rng.randint(3, 7)):
        if rng.random() < 0.55:
            phrase, value = opinion(rng)
            text = rng.choice(OPINION_TEMPLATES).format(aspect=rng.choice(ASPECTS),
                                                             phrase=phrase)
            if k > 0 and rng.random() < 0.3:
                text = f"{rng.choice(CONTRASTS)} {text}"
                value *= 2.5
            score += value
        else:
            fill = {key: rng.choice(vals) for key, vals in FILL.items()}
            text = rng.choice(FILLER_TEMPLATES).format(
                topic=rng.choice(topics), topic2=rng.choice(topics), genre=genre,
                name=rng.choice(NAMES), **fill)
        sentences.append(text)
    return " . ".join(sentences) + " .", score


def main() -> None:
    rng = random.Random(SEED)
    texts, labels = [], []
    # the search and select reviews are the generator's last: the reviews before them are
    # byte for byte those of the task before it had splits
    held_out = N_TEST + N_SEARCH + N_SELECT
    while len(texts) < N_TRAIN + held_out:
        text, score = review(rng)
        if abs(score) < 0.5:  # no clear opinion: a reviewer would not post it
            continue
        label = int(score > 0)
        if rng.random() < LABEL_NOISE:
            label = 1 - label
        texts.append(text)
        labels.append(label)
    extra = rng.sample(range(N_TRAIN + N_TEST, N_TRAIN + held_out), N_SEARCH + N_SELECT)
    splits = {"test": range(N_TRAIN, N_TRAIN + N_TEST),
              "search": sorted(extra[:N_SEARCH]), "select": sorted(extra[N_SEARCH:])}
    ENV.mkdir(parents=True, exist_ok=True)
    with (ENV / "train.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text", "label"])
        w.writerows([i, texts[i], labels[i]] for i in range(N_TRAIN))
    with (ENV / "test.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text"])
        w.writerows([i, texts[i]] for i in range(N_TRAIN, len(texts)))
    for split, members in splits.items():
        with (HERE / ANSWERS[split]).open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "label"])
            w.writerows([i, labels[i]] for i in members)
    print(f"imdb: {N_TRAIN} train and {held_out} held-out reviews (test {N_TEST}, search "
          f"{N_SEARCH}, select {N_SELECT}) written to {ENV}")


if __name__ == "__main__":
    main()
