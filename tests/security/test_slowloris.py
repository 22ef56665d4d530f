# SPDX-License-Identifier: MIT
"""Group 11: front-end exhaustion (slowloris) (docs/security.md).

An attacker on 127.0.0.2 tries to keep 3,000 connections open to the TLS port
(tests/security/slowloris.py: silent TCP, TLS with a header trickled
forever, authenticated POSTs with a body trickled forever), re-opening
every one the server lets go. Meanwhile a legitimate client on 127.0.0.3
(not exempt from any limit) makes a fresh-connection request every 200 ms
(GET /healthz and an authenticated GET /api/threads, 5 s bound each) and
counts answers and latencies. Protected (the shipped dev configuration and
the production site file with the documented main-context settings): at
least 95 % of its requests are answered, pending connections are cut after
client_header_timeout, slow bodies are held to limit_conn per address.
Control ("dev-unprotected": the shipped dev configuration with the
front-end limits stripped, i.e. main's 2 x 1,024 worker connections and
default 60 s timeouts): the legitimate client must fail. A burst of
requests from 127.0.0.2 (up to 1,000, 20 past the first 429) meets
limit_req (429 in the API's JSON error shape) after at least 100 answers;
200 from 127.0.0.1 (exempt) all pass, and against the control all 1,000.

Everything stays on loopback and is bounded (about 40 s per attack run).
One attack runs at a time on the machine (an flock on ATTACK_LOCK): the
attacker needs the CPU to hold its thousands of connections, and `.ci/run`
runs this suite in several instances at once (the distcheck's, the soak's
three parts); the others wait their turn.
"""
import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import requests

import slowloris
from secfix import HERE, _sec_session, stack, stats  # noqa: F401

G = 11
ATTACKER, CLIENT = "127.0.0.2", "127.0.0.3"
COUNTS = {"silent": 400, "header": 2300, "body": 300}
RATE = 400		# new attacker connections per second (ramp and re-opening)
WINDOW = 30.0		# seconds the legitimate client measures
HEADER_TIMEOUT = 10	# client_header_timeout of the shipped configurations
CONN_LIMIT = 32		# limit_conn per address of the shipped configurations
OLD_CAPACITY = 2 * 1024	# main's worker_processes x worker_connections
ATTACK_LOCK = "/tmp/yuxi-test-slowloris.lock"	# one attack at a time


def workers_rss_kb(svc):
    """Resident memory of svc's nginx workers (children of its master)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                st = dict(l.split(":", 1) for l in f if ":" in l)
        except OSError:
            continue
        if st.get("PPid", "").strip() == str(svc.nginx.pid):
            total += int(st.get("VmRSS", "0 kB").split()[0])
    return total


def attack(svc, label):
    """Run the attack against svc while the legitimate client probes;
    returns (probe result, attacker summary, held samples in the window).
    Waits for any other instance's attack to end first (ATTACK_LOCK)."""
    with open(ATTACK_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _attack(svc, label)


def _attack(svc, label):
    n = sum(COUNTS.values())
    ramp = n / RATE + 15
    seconds = ramp + WINDOW + 3
    cmd = [sys.executable, os.path.join(HERE, "slowloris.py"), "127.0.0.1", str(svc.port),
           ATTACKER, str(COUNTS["silent"]), str(COUNTS["header"]), str(COUNTS["body"]),
           "%.0f" % seconds, str(RATE), svc.tokens["bob"]]
    errlog = open(os.path.join(svc.base, "slowloris-%s.log" % label), "wb")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errlog, text=True)
    events = []
    ramped = threading.Event()

    def reader():
        for line in p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            ev["at"] = time.monotonic()
            events.append(ev)
            if ev.get("event") == "ramped":
                ramped.set()
    rt = threading.Thread(target=reader, daemon=True)
    rss0 = workers_rss_kb(svc)
    rt.start()
    try:
        assert ramped.wait(ramp + 10), "attacker did not ramp up"
        t0 = time.monotonic()
        res = slowloris.probe("127.0.0.1", svc.port, CLIENT, svc.tokens["alice"], WINDOW)
        t1 = time.monotonic()
        rss1 = workers_rss_kb(svc)
        p.terminate()	# it prints its summary and exits
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        errlog.close()
    rt.join(10)
    done = [e for e in events if e.get("event") == "done"]
    assert done, "attacker gave no summary"
    held = [e for e in events if e.get("event") == "held" and t0 <= e["at"] <= t1]
    done[0]["rss_kb"] = (rss0, rss1)
    return res, done[0], held


def report(label, res, done, held):
    tot = [h["total"] for h in held] or [0]
    body = [h["held"]["body"] for h in held] or [0]
    print("\n[group 11] %s: legitimate client %d/%d answered (%.1f %%), answered in p50 %s "
          "p95 %s; statuses %s" % (
              label, res["ok"], res["requests"], 100.0 * res["rate"],
              "%.0f ms" % (1000 * res["p50"]) if res["p50"] is not None else "-",
              "%.0f ms" % (1000 * res["p95"]) if res["p95"] is not None else "-",
              res["statuses"]))
    print("[group 11] %s: attacker held %d-%d connections (mean %.0f; slow bodies "
          "max %d), opened %s, failed %s" % (
              label, min(tot), max(tot), sum(tot) / len(tot), max(body),
              done["opened"], done["failed"]))
    print("[group 11] %s: server cut %s; lifetime p50 %s p95 %s s; answers %s" % (
        label, done["cut"], _r(done["life_p50"]), _r(done["life_p95"]), done["answers"]))
    print("[group 11] %s: nginx workers' RSS %d kB before, %d kB at the end of the window" % (
        label, done["rss_kb"][0], done["rss_kb"][1]))


def measure(label, res, done, held):
    tot = [h["total"] for h in held] or [0]
    body = sorted(h["held"]["body"] for h in held) or [0]
    m = {"legit_answered": "%d/%d" % (res["ok"], res["requests"]),
         "legit_p50_ms": round(1000 * res["p50"], 1) if res["p50"] is not None else None,
         "legit_p95_ms": round(1000 * res["p95"], 1) if res["p95"] is not None else None,
         "attacker_held_max": max(tot), "attacker_held_mean": round(sum(tot) / len(tot)),
         "slow_bodies_held_median": body[len(body) // 2],
         "trickled_header_life_p95_s": _r(done["life_p95"])["header"],
         "nginx_workers_rss_mb": "%.1f before, %.1f at the end" % (
             done["rss_kb"][0] / 1024.0, done["rss_kb"][1] / 1024.0)}
    for k, v in m.items():
        stats.measure(G, "%s_%s" % (label, k), v)


def _r(d):
    return {k: (round(v, 1) if v is not None else None) for k, v in d.items()}


def strong_attack(svc, label, tries=3, enough=None):
    """attack(), again (up to `tries` in all) while it was too weak to
    judge: at its peak it must hold more connections than main's nginx has
    (OLD_CAPACITY). On a loaded CI machine the attacker once peaked at
    1,740; a weak attack proves nothing either way, and running the attack
    again costs under a minute, the whole suite again six. `enough(res)`
    true ends the tries as well (the control: the legitimate client was
    already shut out; main's nginx caps that attack near its capacity)."""
    for i in range(tries):
        res, done, held = attack(svc, label)
        peak = max([h["total"] for h in held] or [0])
        if peak > OLD_CAPACITY or (enough is not None and enough(res)):
            break
        print("[group 11] %s: attack too weak (peak %d), try %d of %d" % (label, peak, i + 1, tries))
    return res, done, held


def check_protected(label, svc):
    res, done, held = strong_attack(svc, label)
    report(label, res, done, held)
    measure(label, res, done, held)
    tot = [h["total"] for h in held] or [0]
    body = sorted(h["held"]["body"] for h in held) or [0]
    # the attack must be as strong as the one that kills main: at its peak
    # it holds more connections than main's nginx has
    strong = max(tot) > OLD_CAPACITY
    ok = res["rate"] >= 0.95
    hp95 = done["life_p95"]["header"]
    # trickled headers are cut near client_header_timeout (measured by the
    # attacker, late by its own event-loop lag on a busy machine: 20.2 s
    # once under the sanitizers), far below nginx's default of 60 s and
    # below the measuring window, which an uncut connection outlives
    cut = (done["cut"]["header"] > 0 and hp95 is not None and
           hp95 <= 2.5 * HEADER_TIMEOUT < WINDOW)
    # slow bodies from one address: held to limit_conn (the median of the
    # per-second samples; connections just opened may not have their 429
    # yet: on a loaded machine the attacker counts some of them as held,
    # 52 once under the sanitizers, hence twice the limit; the unprotected
    # control holds hundreds)
    capped = (body[len(body) // 2] <= 2 * CONN_LIMIT
              and done["answers"]["body"].get("429", 0) > 0)
    stats.case(G, escape=not ok, what="%s: legitimate %.1f %% answered" % (label, 100 * res["rate"]))
    stats.case(G, escape=not cut, what="%s: trickled headers cut (p95 %s s)" % (label, hp95))
    stats.case(G, escape=not capped, what="%s: slow bodies held %s" % (label, body[len(body) // 2]))
    assert ok and cut and capped, (res["rate"], hp95, body[len(body) // 2], done["answers"])
    assert strong, "attack too weak: held at most %d" % max(tot)


def test_slowloris_dev():
    check_protected("dev", stack("prod", conf="dev"))


def test_slowloris_prod_site():
    check_protected("prod", stack("prod", conf="prod"))


def test_slowloris_control():
    svc = stack("prod", conf="dev-unprotected")
    res, done, held = strong_attack(svc, "control", enough=lambda r: r["rate"] < 0.5)
    report("control (main's limits)", res, done, held)
    measure("control", res, done, held)
    caught = res["rate"] < 0.5
    stats.control(G, caught, "control: legitimate %.1f %% answered" % (100 * res["rate"]))
    assert caught, "control: the legitimate client got through (%.2f)" % res["rate"]


def burst(svc, src, n=200, after_429=None):
    """n authenticated GET /api/threads on one kept-alive connection from
    src; with after_429, it stops that many requests after the first 429.
    Returns {status: count} and one 429 body (or None)."""
    s = requests.Session()
    a = requests.adapters.HTTPAdapter()
    a.init_poolmanager(1, 1, source_address=(src, 0))
    s.mount("https://", a)
    out, body = {}, None
    try:
        for _ in range(n):
            r = s.get(svc.url + "/api/threads", verify=False, timeout=10,
                      headers={"Authorization": "Bearer " + svc.tokens["alice"]})
            out[r.status_code] = out.get(r.status_code, 0) + 1
            if r.status_code == 429 and body is None:
                body = (r.headers.get("Content-Type"), r.headers.get("Retry-After"), r.text)
            if body is not None and after_429 is not None:
                after_429 -= 1
                if after_429 < 0:
                    break
    finally:
        s.close()
    return out, body


# The attacker's burst: up to BURST requests, 20 past the first 429. On a
# loaded machine 200 requests on one connection may come slower than
# limit_req refills (no 429 at all: it flaked so in CI with three security
# suites at once); the control, which never answers 429, gets all BURST.
BURST = 1000


def test_request_rate_limit():
    import urllib3
    urllib3.disable_warnings()
    for conf in ("dev", "prod"):
        svc = stack("prod", conf=conf)
        got, body = burst(svc, ATTACKER, BURST, after_429=20)
        print("\n[group 11] %s: a burst from %s: %s" % (conf, ATTACKER, got))
        stats.measure(G, "%s_burst_from_127.0.0.2" % conf,
                      "%d answered, %d refused 429" % (got.get(200, 0), got.get(429, 0)))
        shaped = body is not None and body[0].startswith("application/json") and \
            body[1] == "1" and json.loads(body[2])["error"]["code"] == "rate_limited"
        stats.case(G, escape=not (got.get(429, 0) > 0 and shaped),
                   what="%s: burst from %s %s" % (conf, ATTACKER, got))
        assert got.get(429, 0) > 0 and shaped, (got, body)
        assert got.get(200, 0) >= 100, got	# the burst allowance
        exempt, _ = burst(svc, "127.0.0.1")
        print("[group 11] %s: 200 requests from 127.0.0.1: %s" % (conf, exempt))
        stats.case(G, escape=exempt != {200: 200}, what="%s: exempt %s" % (conf, exempt))
        assert exempt == {200: 200}, exempt
    svc = stack("prod", conf="dev-unprotected")
    got, _ = burst(svc, ATTACKER, BURST, after_429=20)
    print("[group 11] control: %d requests from %s: %s" % (BURST, ATTACKER, got))
    stats.measure(G, "control_burst_from_127.0.0.2",
                  "%d answered, %d refused 429" % (got.get(200, 0), got.get(429, 0)))
    caught = got == {200: BURST}
    stats.control(G, caught, "control: burst %s" % got)
    assert caught, got
