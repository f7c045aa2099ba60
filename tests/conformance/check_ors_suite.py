"""Runs inside the ors-sdk venv: ors-sdk 0.1.0's own server tests (`tests/test_server.py`, from
its source distribution on the package index, unmodified) pointed at a running server, and its
example client's whole walkthrough (`examples/test_client.py`) against another.

The tests build their client on `httpx.ASGITransport(app=Server([GSM8KEnv]).app)`; a plugin
loaded before them makes that transport send each request to URL instead (ORS's own app is
built and never called). The walkthrough's one change is its `BASE_URL` line.

    python check_ors_suite.py SCRATCH TESTS_URL WALKTHROUGH_URL  ->  JSON on stdout:
        {"tests": {name: "passed" | "failed: <first line>"}, "walkthrough": [lines]}
"""

import json
import re
import subprocess
import sys
from pathlib import Path

from sdist import unpacked

scratch, tests_url, walk_url = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
source = unpacked(scratch, "ors-sdk==0.1.0")

PLUGIN = '''
import os
import httpx

_TARGET = httpx.URL(os.environ["TASKPACK_ORS_URL"])


class _Redirect(httpx.AsyncHTTPTransport):
    """ASGITransport's place: every request goes to the server under test."""

    def __init__(self, app=None, **kwargs):
        super().__init__()

    async def handle_async_request(self, request):
        request.url = request.url.copy_with(
            scheme=_TARGET.scheme, host=_TARGET.host, port=_TARGET.port
        )
        request.headers["host"] = f"{_TARGET.host}:{_TARGET.port}"
        return await super().handle_async_request(request)


httpx.ASGITransport = _Redirect
'''
(scratch / "taskpack_redirect.py").write_text(PLUGIN)
report = scratch / "report.xml"
subprocess.run(
    [sys.executable, "-m", "pytest", "-p", "taskpack_redirect", "-q", "-p", "no:cacheprovider",
     f"--junitxml={report}", "tests/test_server.py"],
    cwd=source, env={"PYTHONPATH": str(scratch), "TASKPACK_ORS_URL": tests_url, "PATH": ""},
    check=False, capture_output=True,
)  # fmt: skip
import xml.etree.ElementTree as ET  # noqa: E402 - after the run, as the report is read

outcomes = {}
for case in ET.parse(report).getroot().iter("testcase"):
    failed = case.find("failure")
    if failed is None:
        failed = case.find("error")
    first = (failed.get("message") or "").splitlines()[0] if failed is not None else ""
    outcomes[case.get("name")] = "passed" if failed is None else f"failed: {first}"

walk = (source / "examples" / "test_client.py").read_text()
walk = re.sub(r'^BASE_URL = ".*"$', f"BASE_URL = {walk_url!r}", walk, count=1, flags=re.M)
ran = subprocess.run(
    [sys.executable, "-c", walk], capture_output=True, text=True, check=False, timeout=300
)
if ran.returncode != 0:
    sys.exit(f"the walkthrough failed:\n{ran.stderr[-3000:]}")
print(json.dumps({"tests": outcomes, "walkthrough": ran.stdout.splitlines()}))
