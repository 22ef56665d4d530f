# SPDX-License-Identifier: MIT
"""LocalSandbox: deepagents' own BaseSandbox with only execute, upload and
download implemented, on this machine (commands through /bin/sh, files
directly): every other operation is BaseSandbox's shell script. The
reference the Python suite compares YuxiSandbox with (the agent loop,
the glob matcher), as the JS suite compares its adapter with
LocalShellBackend. Needs the vendored deepagents kit on sys.path."""
import os
import subprocess

from deepagents.backends.protocol import (ExecuteResponse, FileDownloadResponse,
                                          FileUploadResponse)
from deepagents.backends.sandbox import BaseSandbox


class LocalSandbox(BaseSandbox):
    def __init__(self, cwd):
        self.cwd = cwd

    @property
    def id(self):
        return "local"

    def execute(self, command, *, timeout=None):
        p = subprocess.run(["/bin/sh", "-c", command], cwd=self.cwd, capture_output=True,
                           timeout=timeout or 120)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        return ExecuteResponse(output=out, exit_code=p.returncode)

    def upload_files(self, files):
        out = []
        for path, data in files:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
                out.append(FileUploadResponse(path=path))
            except OSError as e:
                out.append(FileUploadResponse(path=path, error=str(e)))
        return out

    def download_files(self, paths):
        out = []
        for path in paths:
            try:
                with open(path, "rb") as f:
                    out.append(FileDownloadResponse(path=path, content=f.read()))
            except FileNotFoundError:
                out.append(FileDownloadResponse(path=path, error="file_not_found"))
        return out
