"""Print the per-group table of the proof suites, part B, from the results
JSON (tests/proof/prooffix.py) and exit 1 when a group has an escape, host
bytes, outside metadata, a hang, a lost request, a leaked container, or a
control case that did not catch its leak."""
import json
import sys

NAMES = {"3": "host-side access", "7": "confinement", "8": "resource exhaustion",
         "9": "lifecycle, shared memory", "12": "between tenants"}
BAD = ("escapes", "host_bytes", "outside_metadata", "hangs", "lost_requests",
       "leaked_containers")


def main(path):
    try:
        with open(path) as f:
            res = json.load(f)
    except (OSError, ValueError):
        print("proof: no results in %s" % path)
        return 1
    bad = 0
    print("%-5s %-24s %7s %7s %6s %6s %5s %5s %6s %9s" % (
        "group", "", "cases", "escapes", "hostb", "meta", "hangs", "lost", "leaked",
        "control"))
    for g in sorted(res, key=int):
        s = res[g]
        get = lambda k: s.get(k, 0)
        print("%-5s %-24s %7d %7d %6d %6d %5d %5d %6d %4d/%-4d" % (
            g, NAMES.get(g, ""), get("cases"), get("escapes"), get("host_bytes"),
            get("outside_metadata"), get("hangs"), get("lost_requests"),
            get("leaked_containers"), get("control_caught"), get("control_cases")))
        for k, v in sorted(s.get("measures", {}).items()):
            print("      %s = %s" % (k, v))
        if any(get(k) for k in BAD) or get("control_caught") != get("control_cases"):
            bad += 1
            for w in s.get("failures", []):
                print("      failed: %s" % w)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
