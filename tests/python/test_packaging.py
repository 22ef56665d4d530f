# SPDX-License-Identifier: MIT
"""clients/python installs offline: its build backend (pep517_backend.py,
standard library only) makes a wheel with every module and py.typed, and
pip installs the project with no index reachable, build isolation on.
The runtime imports nothing outside the standard library."""
import ast
import os
import subprocess
import sys
import zipfile

import pytest
from conftest import TOP

PKG = os.path.join(TOP, "clients", "python")
STDLIB = set(sys.stdlib_module_names)


def test_wheel_holds_every_module_and_py_typed(tmp_path):
    sys.path.insert(0, PKG)
    try:
        import pep517_backend
    finally:
        sys.path.remove(PKG)
    name = pep517_backend.build_wheel(str(tmp_path))
    assert name == "yuxi_sandbox-0.1.0-py3-none-any.whl"
    names = set(zipfile.ZipFile(tmp_path / name).namelist())
    mods = {"yuxi_sandbox/" + f for f in os.listdir(os.path.join(PKG, "yuxi_sandbox"))
            if f.endswith(".py") or f == "py.typed"}
    assert mods <= names and "yuxi_sandbox/py.typed" in names
    assert "yuxi_sandbox-0.1.0.dist-info/METADATA" in names
    sdist = pep517_backend.build_sdist(str(tmp_path))
    assert sdist == "yuxi_sandbox-0.1.0.tar.gz"


def test_runtime_imports_only_the_standard_library():
    """Every import of the package but the optional deepagents module's."""
    for f in os.listdir(os.path.join(PKG, "yuxi_sandbox")):
        if not f.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(PKG, "yuxi_sandbox", f)).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for t in tops:
                assert t in STDLIB or (f == "deepagents.py" and t == "deepagents"), (f, t)


def test_pip_install_offline(tmp_path):
    """`pip install clients/python` with build isolation and no index."""
    r = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if r.returncode != 0:
        pytest.skip("no pip for %s" % sys.executable)
    target = tmp_path / "site"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target),
                        PKG], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c",
                        "import yuxi_sandbox, importlib.metadata as m; "
                        "print(yuxi_sandbox.__file__, m.version('yuxi-sandbox'))"],
                       capture_output=True, text=True, cwd=str(tmp_path),
                       env=dict(env, PYTHONPATH=str(target)))
    assert r.returncode == 0, r.stderr
    path, version = r.stdout.split()
    assert path.startswith(str(target)) and version == "0.1.0"
