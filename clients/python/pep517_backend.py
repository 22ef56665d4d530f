# SPDX-License-Identifier: MIT
"""A PEP 517 / PEP 660 build backend in the standard library, for this
one pure-Python package: ``pip install clients/python`` needs no
setuptools or wheel from an index (none is reachable offline), with or
without build isolation.

It reads ``[project]`` (name, version, description, readme,
requires-python, license, authors, classifiers, dependencies,
optional-dependencies) and ``[tool.yuxi-build] packages`` from
pyproject.toml and writes: a wheel (``py3-none-any``) of those packages'
files, an sdist of the project, and an editable wheel (a ``.pth`` file
naming this directory).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
_SKIP_DIRS = {"__pycache__"}


def _project() -> dict:
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _dist(p: dict) -> tuple[str, str]:
    return p["project"]["name"].replace("-", "_"), p["project"]["version"]


def _metadata(p: dict) -> str:
    pr = p["project"]
    lines = ["Metadata-Version: 2.1", "Name: " + pr["name"], "Version: " + pr["version"]]
    if "description" in pr:
        lines.append("Summary: " + pr["description"])
    if "requires-python" in pr:
        lines.append("Requires-Python: " + pr["requires-python"])
    if "license" in pr and "text" in pr["license"]:
        lines.append("License: " + pr["license"]["text"])
    for a in pr.get("authors", []):
        if "name" in a:
            lines.append("Author: " + a["name"])
    for c in pr.get("classifiers", []):
        lines.append("Classifier: " + c)
    for d in pr.get("dependencies", []):
        lines.append("Requires-Dist: " + d)
    for extra, deps in pr.get("optional-dependencies", {}).items():
        lines.append("Provides-Extra: " + extra)
        for d in deps:
            lines.append('Requires-Dist: %s; extra == "%s"' % (d, extra))
    text = "\n".join(lines) + "\n"
    readme = pr.get("readme")
    if isinstance(readme, str):
        with open(os.path.join(HERE, readme), encoding="utf-8") as f:
            text += "Description-Content-Type: text/markdown\n\n" + f.read()
    return text


def _files(p: dict) -> list[str]:
    out = []
    for pkg in p["tool"]["yuxi-build"]["packages"]:
        for d, dirs, names in os.walk(os.path.join(HERE, pkg)):
            dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS)
            for n in sorted(names):
                if not n.endswith((".pyc", ".pyo")):
                    out.append(os.path.relpath(os.path.join(d, n), HERE))
    return out


class _Wheel:
    def __init__(self, path: str) -> None:
        self.zf = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record: list[str] = []

    def add(self, name: str, data: bytes) -> None:
        zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        zi.external_attr = 0o644 << 16
        zi.compress_type = zipfile.ZIP_DEFLATED
        self.zf.writestr(zi, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))

    def close(self, record_name: str) -> None:
        self.record.append(record_name + ",,")
        self.zf.writestr(zipfile.ZipInfo(record_name, date_time=(2026, 1, 1, 0, 0, 0)),
                         "\n".join(self.record) + "\n")
        self.zf.close()


def _build(wheel_directory: str, editable: bool) -> str:
    p = _project()
    name, version = _dist(p)
    fname = "%s-%s-py3-none-any.whl" % (name, version)
    w = _Wheel(os.path.join(wheel_directory, fname))
    if editable:
        w.add("%s.pth" % name, (HERE + "\n").encode())
    else:
        for rel in _files(p):
            with open(os.path.join(HERE, rel), "rb") as f:
                w.add(rel.replace(os.sep, "/"), f.read())
    info = "%s-%s.dist-info" % (name, version)
    w.add(info + "/METADATA", _metadata(p).encode("utf-8"))
    w.add(info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: pep517_backend\n"
          b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    w.close(info + "/RECORD")
    return fname


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    name, version = _dist(p)
    top = "%s-%s" % (name, version)
    fname = top + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, fname), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel in ["pyproject.toml", "README.md", "pep517_backend.py"] + _files(p):
            t.add(os.path.join(HERE, rel), arcname=top + "/" + rel, recursive=False)
        data = _metadata(p).encode("utf-8")
        ti = tarfile.TarInfo(top + "/PKG-INFO")
        ti.size = len(data)
        ti.mode = 0o644
        t.addfile(ti, io.BytesIO(data))
    return fname
