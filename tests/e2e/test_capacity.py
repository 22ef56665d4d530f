# SPDX-License-Identifier: MIT
"""Capacity and concurrency invariants of docs/design.md §2 through the real
stack: one thread -> one container under a burst of first requests, threads never
share a container, max_replicas is never exceeded (LRU idle eviction), and
a full table of busy sandboxes answers 503 capacity with Retry-After."""
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import containers, engine_up

pytestmark = pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")


def test_fifty_parallel_first_requests_one_container(svc, alice):
    tid = svc.new_thread()
    sessions = [requests.Session() for _ in range(50)]
    try:
        assert containers(svc.prefix, tid) == []
        barrier = threading.Barrier(50)

        def one(sess):
            barrier.wait()
            r = svc.execute(tid, "echo hi", session=sess)
            return r.status_code, r.text
        with ThreadPoolExecutor(max_workers=50) as ex:
            results = list(ex.map(one, sessions))
        bad = [r for r in results if r[0] != 200]
        assert not bad, bad[:3]
        outputs = {json.loads(t)["output"] for _, t in results}
        assert outputs == {"hi\n"}
        boxes = containers(svc.prefix, tid)
        assert len(boxes) == 1, boxes
        slot = svc.sandboxes()[tid]
        assert slot["container_id"] == boxes[0][0]
        assert slot["holds"] == 0
    finally:
        for s in sessions:
            s.close()
        alice.delete("/api/threads/" + tid)
    assert containers(svc.prefix, tid) == []


def test_twenty_threads_in_parallel_are_isolated(svc, alice):
    tids = [svc.new_thread() for _ in range(20)]
    try:
        def one(tid):
            with requests.Session() as sess:
                r = svc.execute(tid, "echo %s > %s.txt && ls /home/yuxi/user-data/workspace"
                                % (tid, tid), session=sess)
            return tid, r.status_code, r.text
        with ThreadPoolExecutor(max_workers=20) as ex:
            results = list(ex.map(one, tids))
        for tid, code, text in results:
            assert code == 200, (tid, text)
            assert json.loads(text)["output"] == "%s.txt\n" % tid, (tid, text)
        ids = set()
        for tid in tids:
            boxes = containers(svc.prefix, tid)
            assert len(boxes) == 1, (tid, boxes)
            ids.add(boxes[0][0])
        assert len(ids) == 20
        assert len(containers(svc.prefix)) >= 20
    finally:
        for tid in tids:
            alice.delete("/api/threads/" + tid)
    for tid in tids:
        assert containers(svc.prefix, tid) == []


class Sampler:
    """Counts the instance's containers every `every` seconds in the background."""

    def __init__(self, prefix, every=0.2):
        self.prefix = prefix
        self.every = every
        self.samples = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(len(containers(self.prefix, running_only=False)))
            self.stop.wait(self.every)

    def finish(self):
        self.stop.set()
        self.t.join(30)
        return self.samples


def test_max_replicas_lru_eviction_and_503(factory):
    inst = factory(YUXI_SANDBOX_MAX_REPLICAS=2, YUXI_SANDBOX_IDLE_TIMEOUT=120,
                   YUXI_SANDBOX_IDLE_CHECK_INTERVAL=1)
    a, b, c, d = (inst.new_thread() for _ in range(4))
    sampler = Sampler(inst.prefix)
    try:
        for tid in (a, b):
            r = inst.execute(tid, "echo %s" % tid)
            assert r.status_code == 200 and r.json()["output"] == tid + "\n", r.text
            time.sleep(0.3)          # a is strictly less recently used than b
        box_a = containers(inst.prefix, a)
        box_b = containers(inst.prefix, b)
        assert len(box_a) == 1 and len(box_b) == 1
        assert len(containers(inst.prefix)) == 2
        # C: the table is full, A is the LRU idle one -> evicted
        r = inst.execute(c, "echo c")
        assert r.status_code == 200 and r.json()["output"] == "c\n", r.text
        assert containers(inst.prefix, a) == [], "LRU sandbox A was not evicted"
        assert containers(inst.prefix, b) == box_b, "B (more recently used) was evicted"
        assert len(containers(inst.prefix, c)) == 1
        assert set(inst.sandboxes()) == {b, c}
        # all busy: B and C run long commands; D gets 503 capacity + Retry-After
        out = {}

        def long(tid):
            out[tid] = inst.execute(tid, "sleep 8; echo slept")
        runners = [threading.Thread(target=long, args=(t,)) for t in (b, c)]
        for t in runners:
            t.start()
        deadline = time.time() + 10
        while time.time() < deadline:
            holds = {k: v["holds"] for k, v in inst.sandboxes().items()}
            if holds.get(b, 0) > 0 and holds.get(c, 0) > 0:
                break
            time.sleep(0.1)
        assert holds.get(b, 0) > 0 and holds.get(c, 0) > 0, holds
        r = inst.execute(d, "echo d")
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "capacity"
        assert "Retry-After" in r.headers and int(r.headers["Retry-After"]) > 0
        assert containers(inst.prefix, d) == []
        for t in runners:
            t.join(60)
        for tid in (b, c):
            assert out[tid].status_code == 200, out[tid].text
            assert out[tid].json()["output"] == "slept\n"
        # once they are idle again, D gets a box by evicting the LRU one (B)
        r = inst.execute(d, "echo d")
        assert r.status_code == 200 and r.json()["output"] == "d\n", r.text
        assert len(containers(inst.prefix)) == 2
    finally:
        samples = sampler.finish()
    assert samples and max(samples) <= 2, samples
