"""Print the per-group table of the security suite from its results JSON
(tests/security/secfix.py) and fail when a group has an escape, a leak, a
hang, or a control case that did not catch its leak."""
import json
import sys

NAMES = {"1": "identity and authorization", "2": "path parsing", "4": "downloads",
         "5": "uploads", "6": "hostile listings", "10": "fuzzing",
         "11": "front-end exhaustion"}


def main(path):
    try:
        with open(path) as f:
            res = json.load(f)
    except (OSError, ValueError):
        print("security: no results in %s" % path)
        return 1
    bad = 0
    print("%-5s %-28s %7s %7s %6s %6s %9s" % ("group", "", "cases", "escapes", "leaks",
                                              "hangs", "control"))
    for g in sorted(res, key=int):
        s = res[g]
        print("%-5s %-28s %7d %7d %6d %6d %4d/%-4d" % (
            g, NAMES.get(g, ""), s["cases"], s["escapes"], s["leaks"], s["hangs"],
            s["control_caught"], s["control_cases"]))
        for k, v in sorted(s.get("measures", {}).items()):
            print("      %s = %s" % (k, v))
        if s["escapes"] or s["leaks"] or s["hangs"] or s["control_caught"] != s["control_cases"]:
            bad += 1
            for w in s.get("failures", []):
                print("      failed: %s" % w)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
