"""Real servers for the tests, on 127.0.0.1 only: SeaweedFS (S3).

Started once per test session by fixtures in conftest.py, each on free ports, and stopped at the
end. `.ci/run` installs the binaries; a missing one fails the tests rather than skipping them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY, SECRET_KEY = "testkey", "testsecret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_tool(name: str) -> str:
    """A console script installed beside this Python, or on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} is not installed; run .ci/run or pip install the test extras")
    return found


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    """Return once `proc` answers at `url`. An answer counts only from `proc` itself: its port was
    chosen free before it started, and another server may have bound that port in between (the
    servers the tests start pick theirs the same way, and SeaweedFS binds fixed ports of its
    own). That server's answers (SeaweedFS refuses an unsigned request with 403) would then pass
    for `proc`'s, which fails to bind and exits, and every test after it would see them."""
    port = urllib.parse.urlsplit(url).port
    assert port is not None, url
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                pass
        except urllib.error.HTTPError:
            pass  # it answered: up, even if that path is an error
        except OSError:
            time.sleep(0.2)
            continue
        if listens(proc.pid, port):
            return
        time.sleep(0.2)
    raise RuntimeError(
        f"server at {url} not ready after {timeout}s"
        + ("" if proc.poll() is not None else " (another process answers on its port)")
        + f":\n{log.read_text()[-3000:]}"
    )


def listens(pid: int, port: int) -> bool:
    """Whether process `pid` holds a listening TCP socket on `port` (Linux's /proc)."""
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                sockets.add(f"socket:[{fields[9]}]")
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:  # exited
        return False
    for fd in fds:
        with contextlib.suppress(OSError):  # closed since it was listed
            if os.readlink(fd) in sockets:
                return True
    return False


@dataclass
class Server:
    endpoint: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_seaweedfs(workdir: Path) -> Server:
    data = workdir / "data"
    data.mkdir(parents=True)
    config = workdir / "s3.json"
    identity = {
        "name": "ci",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    config.write_text(json.dumps({"identities": [identity]}))
    s3 = free_port()
    ports = {
        name: free_port()
        for name in (
            "s3.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
        )
    }
    log = workdir / "weed.log"
    args = [
        find_tool("weed"),
        f"-logdir={workdir}",  # its rotated logs, and its socket below, in its folder, not /tmp
        "mini",
        f"-dir={data}",
        f"-s3.localSocket={workdir / 's3.sock'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-s3.port={s3}",
        f"-s3.config={config}",
        "-s3.allowDeleteBucketNotEmpty=false",
        "-s3.autoCreateBucket=false",
        # Each bucket is a collection of its own volumes, and the tests make a bucket per test:
        # left to itself the server allows free disk / 1 GiB volumes, so a machine with 30 GiB
        # free refuses writes after about 30 buckets (InternalError, "no free volumes left").
        # Volumes are not preallocated: a count above what the disk holds costs nothing.
        "-volume.max=2000",
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        *(f"-{name}={port}" for name, port in ports.items()),
    ]
    proc = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{s3}", proc, log)
    try:
        wait_http(f"{server.endpoint}/healthz", proc, log)
    except BaseException:
        server.stop()
        raise
    return server
