import csv

# A starter that predicts the mean price of the training rows.
with open("train.csv") as f:
    rows = list(csv.DictReader(f))
mean = sum(float(r["SalePrice"]) for r in rows) / len(rows)
with open("submission.csv", "w") as f:
    f.write("Id,SalePrice\n")
    for i in (1, 2, 3):
        f.write(f"{i},{mean}\n")
print("predicted", mean)
