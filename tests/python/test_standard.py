# SPDX-License-Identifier: MIT
"""LangChain's standard sandbox suite (SandboxIntegrationTests, 77 tests:
72 sync, 4 async, the no-override meta-test) against YuxiSandbox on the
real service over HTTPS.

The suite and the deepagents 0.7.8 backends come from the vendored kit
(../shared/third_party/deepagents-py, never copied here). The suite is
older than deepagents 0.7.8's protocol in two places, and YuxiSandbox
follows the protocol there (docs/python.md "Where the standard suite and
deepagents 0.7.8 disagree"): those 7 tests are xfail with the reason, and
strict, so that one passing is noticed. Nothing else is overridden
(test_no_overrides_DO_NOT_OVERRIDE checks it).

With YUXI_PY_SESSION=1 the backend runs in session mode (session=True:
every execute in one shell session of the thread), the suite's second
run that docs/python.md reports.

The scratch directory is in the thread's workspace: the suite's default,
/tmp/test_sandbox_ops/, is outside the service's namespace (and refused
by its command path policy).
"""
import os
from collections.abc import Iterator

import pytest
from conftest import KIT, need_deepagents, thread_id

try:
    from langchain_tests.integration_tests import SandboxIntegrationTests
    from yuxi_sandbox.deepagents import YuxiSandbox
except ImportError as e:	# the kit is absent: one skipped test says so
    WHY = "the standard suite's kit is not importable from %s: %s" % (KIT, e)

    def test_standard_suite_kit():
        pytest.skip(WHY)
else:
    WRITE = ("deepagents 0.7.8's protocol: write creates or overwrites "
             "(BackendProtocol.write, BaseSandbox.write); this older suite expects a "
             "refusal, which would break an agent that rewrites a file whole")
    GLOB_REL = ("deepagents 0.7.8's protocol: glob answers absolute paths (its "
                "filesystem permission rules match absolute paths only); this older "
                "suite expects paths relative to the search root")
    GLOB_DIRS = ("deepagents 0.7.8's protocol: glob matches regular files only, "
                 "never directories; this older suite expects directories too")

    def xfail(reason):
        return pytest.mark.xfail(reason=reason, strict=True)

    class TestYuxiSandboxStandard(SandboxIntegrationTests):
        @property
        def sandbox_root_dir(self) -> str:
            return "/home/yuxi/user-data/workspace/test_sandbox_ops/"

        @pytest.fixture(scope="class")
        def sandbox(self, svc) -> Iterator[YuxiSandbox]:
            need_deepagents()
            session = os.environ.get("YUXI_PY_SESSION") == "1"
            sb = YuxiSandbox.create(url=svc.url, token=svc.tokens["alice"],
                                    ca_file=svc.cert, thread_id=thread_id("std"),
                                    session=session)
            try:
                yield sb
            finally:
                sb.delete()
            ops = [ln.get("op") for ln in svc.audit_lines() if ln.get("thread") == sb.id]
            print("standard suite: %d commands by execute, %d in a session"
                  % (ops.count("execute"), ops.count("session_execute")))
            if session:	# the mode is the one asked for
                assert ops.count("session_execute") > 0 and ops.count("execute") == 0

        @xfail(WRITE)
        def test_write_existing_file_fails(self, sandbox_backend, sandbox_test_root):
            super().test_write_existing_file_fails(sandbox_backend, sandbox_test_root)

        @xfail(GLOB_REL)
        def test_glob(self, sandbox_backend, sandbox_test_root):
            super().test_glob(sandbox_backend, sandbox_test_root)

        @xfail(GLOB_REL)
        def test_glob_basic_pattern(self, sandbox_backend, sandbox_test_root):
            super().test_glob_basic_pattern(sandbox_backend, sandbox_test_root)

        @xfail(GLOB_REL)
        def test_glob_hidden_files_explicitly(self, sandbox_backend, sandbox_test_root):
            super().test_glob_hidden_files_explicitly(sandbox_backend, sandbox_test_root)

        @xfail(GLOB_REL)
        def test_glob_with_character_class(self, sandbox_backend, sandbox_test_root):
            super().test_glob_with_character_class(sandbox_backend, sandbox_test_root)

        @xfail(GLOB_REL)
        def test_glob_with_question_mark(self, sandbox_backend, sandbox_test_root):
            super().test_glob_with_question_mark(sandbox_backend, sandbox_test_root)

        @xfail(GLOB_DIRS)
        def test_glob_with_directories(self, sandbox_backend, sandbox_test_root):
            super().test_glob_with_directories(sandbox_backend, sandbox_test_root)
