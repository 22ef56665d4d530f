#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the column names, row count and numeric column ranges of a CSV file."""
import csv
import sys


def main(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        print("empty file")
        return 0
    head, body = rows[0], rows[1:]
    print("columns:", ", ".join(head))
    print("rows:", len(body))
    for i, name in enumerate(head):
        vals = []
        for r in body:
            try:
                vals.append(float(r[i]))
            except (IndexError, ValueError):
                pass
        if vals:
            print(f"{name}: min={min(vals)} max={max(vals)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: csv_summary.py FILE.csv", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
