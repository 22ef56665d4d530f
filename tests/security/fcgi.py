# SPDX-License-Identifier: MIT
"""A minimal FastCGI client (responder role) for talking to yuxi-sandboxd's
socket directly, without nginx: the worker-level half of the identity and
parameter tests. request(sock_path, params, body) -> (status, headers, body).
"""
import socket
import struct

BEGIN, END, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7


def _rec(kind, content, rid=1):
    out = b""
    for i in range(0, max(len(content), 1), 65535):
        chunk = content[i:i + 65535]
        pad = (8 - len(chunk) % 8) % 8
        out += struct.pack(">BBHHBB", 1, kind, rid, len(chunk), pad, 0) + chunk + b"\0" * pad
        if not content:
            break
    return out


def _len(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def _pairs(params):
    out = b""
    for k, v in params:
        k = k.encode() if isinstance(k, str) else k
        v = v.encode() if isinstance(v, str) else v
        out += _len(len(k)) + _len(len(v)) + k + v
    return out


def _connect(sock_path, timeout):
    """A stream socket connected to the FastCGI socket at sock_path."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    return s


def _head(params):
    """The begin-request record and the params of request 1."""
    return (_rec(BEGIN, struct.pack(">HB5x", 1, 0)) + _rec(PARAMS, _pairs(params))
            + _rec(PARAMS, b""))


def request(sock_path, params, body=b"", timeout=30):
    """params: list of (name, value) (duplicates allowed, bytes or str)."""
    s = _connect(sock_path, timeout)
    try:
        data = _head(params)
        if body:
            data += _rec(STDIN, body)
        data += _rec(STDIN, b"")
        s.sendall(data)
        out, buf = b"", b""
        while True:
            while len(buf) < 8:
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionError("FastCGI connection closed early")
                buf += chunk
            _, kind, _, clen, pad, _ = struct.unpack(">BBHHBB", buf[:8])
            while len(buf) < 8 + clen + pad:
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionError("FastCGI record cut")
                buf += chunk
            content, buf = buf[8:8 + clen], buf[8 + clen + pad:]
            if kind == STDOUT:
                out += content
            elif kind == END:
                break
    finally:
        s.close()
    head, _, payload = out.partition(b"\r\n\r\n")
    headers = {}
    status = 200
    for line in head.split(b"\r\n"):
        k, _, v = line.partition(b":")
        k = k.strip().lower().decode("latin-1")
        v = v.strip().decode("latin-1")
        if k == "status":
            status = int(v.split()[0])
        headers.setdefault(k, v)
    return status, headers, payload


def api_params(method, uri, query="", user=None, extra=()):
    p = [("REQUEST_METHOD", method), ("DOCUMENT_URI", uri), ("SCRIPT_NAME", uri),
         ("QUERY_STRING", query), ("CONTENT_LENGTH", ""), ("SERVER_PROTOCOL", "HTTP/1.1")]
    if user is not None:
        p.append(("YUXI_USER", user))
    return p + list(extra)


def request_abort(sock_path, params, body_part, timeout=10):
    """Send the params and only body_part of the body (no end of stdin),
    then close the connection: a client that vanished mid-upload."""
    s = _connect(sock_path, timeout)
    try:
        data = _head(params)
        data += _rec(STDIN, body_part)
        s.sendall(data)
    finally:
        s.close()
