"""Load test of `taskpack serve` on loopback, side by side with nginx serving the same bytes.

Task-by-index JSON (random indices, keep-alive clients, wrk) from `taskpack serve --workers W`
against nginx (Debian's package, W worker processes, a config of its own in a temp folder)
serving each task's JSON, byte for byte the server's answer, as a static file, and beside them
taskpack's HTTP server itself (taskpack/http1.py) answering every request with one task's bytes
from an application that does nothing else (what the server allows on this machine).
Each is warmed until its rate settles; rounds alternate; medians of requests/s and of p99
latency are reported, with the ratio to nginx.

Then what the server must withstand, measured on the same server:
  idle       N connections opened and left silent; the slowest of a run of normal requests
  filter     normal requests while a slow `where` filter runs over a large split
  big file   8 slow clients downloading a 256 MiB task file: the server's RSS growth
  diffs      normal requests while 8 diffs of 50k-task versions run (on their own lane)

    apt-get install nginx wrk
    python bench/serve.py [--tasks 20000] [--seconds 8] [--rounds 3] [--clients 64,512]

Bounded: fixed durations, timeouts on every request, 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import build_taskset, machine, served

NGINX = """worker_processes {workers};
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {root}/body; proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fcgi; uwsgi_temp_path {root}/uwsgi; scgi_temp_path {root}/scgi;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port};
    location / {{ root {root}/static; default_type application/json; }}
  }}
}}
"""
LUA = """math.randomseed({seed})
request = function()
  return wrk.format("GET", string.format("{prefix}%d", math.random(0, {last})))
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_nginx(root: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    for folder in (root, *root.parents):  # nginx's workers run as another user: let them read
        if folder == Path(tempfile.gettempdir()):
            break
        folder.chmod(0o755)
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(NGINX.format(workers=workers, root=root, port=port))
    proc = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(root), "-g", "daemon off;"])
    return answering(proc, port, "nginx", tries=100)


def answering(
    proc: subprocess.Popen[bytes], port: int, what: str, tries: int
) -> tuple[subprocess.Popen[bytes], str]:
    """`proc` and its URL once it answers on `port` (any HTTP answer), polled `tries` times."""
    url = f"http://127.0.0.1:{port}"
    for _ in range(tries):
        try:
            httpx.get(url + "/", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not start")


def warm(url: str, script: Path, clients: int, most: int = 10) -> None:
    """Short runs until the rate stops rising by 5%: connections made, and every task rendered
    once in each worker's response cache (as a server that has run a while has them; nginx's
    files are in the page cache from their writing)."""
    last = 0.0
    for _ in range(most):
        rate = wrk(url, script, clients, 2)[0]
        if rate < last * 1.05:
            return
        last = rate


def wrk(url: str, script: Path, clients: int, seconds: int) -> tuple[float, float]:
    """(requests/s, p99 ms) of one wrk run; non-2xx answers fail the run."""
    threads = str(min(clients, 2))
    out = subprocess.run(
        ["wrk", "-t", threads, "-c", str(clients), "-d", f"{seconds}s", "--latency",
         "--timeout", "10s", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    if "Non-2xx" in out or ("Socket errors" in out and "timeout" in out):
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    assert p99 is not None
    value = float(p99.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    return rps, value


# The same HTTP server `taskpack serve` runs on (taskpack/http1.py), in front of an application
# that answers every request with one task's bytes and does nothing else: what the server
# itself allows on this machine.
BARE = """import sys
from taskpack.serve.server import Response, run
BODY = open(sys.argv[3], "rb").read()
class App:
    def __init__(self):
        self.response = Response(200, "application/json", BODY)
    def ready(self, method, path, query, host):
        return self.response
    def headers(self, response):
        return [("content-type", response.content_type)]
    def close(self):
        pass
if __name__ == "__main__":
    try:
        run(App, "127.0.0.1", int(sys.argv[1]), int(sys.argv[2]))
    except KeyboardInterrupt:  # stopped by SIGTERM, as `taskpack serve` is: no traceback
        pass
"""


def start_bare(root: Path, workers: int, body: Path) -> tuple[subprocess.Popen[bytes], str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bare.py").write_text(BARE)
    port = free_port()
    command = [sys.executable, "bare.py", str(port), str(workers), str(body)]
    return answering(subprocess.Popen(command, cwd=root), port, "the bare server", 200)


def throughput(args: argparse.Namespace, root: Path) -> None:
    ts = build_taskset(root / "ts", args.tasks)
    with served(str(ts), "--workers", str(args.workers)) as (_, url):
        static = root / "nginx" / "static" / "t"
        static.mkdir(parents=True)
        with httpx.Client(base_url=url, timeout=10) as http:  # the very bytes it answers
            for i in range(args.tasks):
                (static / str(i)).write_bytes(http.get(f"/api/v1/splits/train/tasks/{i}").content)
        median = sorted(static.iterdir(), key=lambda f: f.stat().st_size)[args.tasks // 2]
        server, nginx_url = start_nginx(root / "nginx", args.workers)
        bare, bare_url = start_bare(root / "bare", args.workers, median)
        try:
            urls = {"taskpack": url, "nginx": nginx_url, "bare server": bare_url}
            compared(args, root, urls)
        finally:
            for proc in (server, bare):
                proc.terminate()
                proc.wait()


def compared(args: argparse.Namespace, root: Path, urls: dict[str, str]) -> None:
    """Each server's requests/s and p99 at each number of clients, rounds alternating."""
    scripts = {}
    prefixes = {"taskpack": "/api/v1/splits/train/tasks/", "nginx": "/t/", "bare server": "/t/"}
    for name in urls:
        scripts[name] = root / f"{name.replace(' ', '-')}.lua"
        scripts[name].write_text(LUA.format(seed=7, prefix=prefixes[name], last=args.tasks - 1))
    print(
        f"task by index, {args.tasks} tasks, {args.workers} workers each, "
        f"{machine()}; each warmed until its rate settles, then median of {args.rounds} rounds "
        f"of {args.seconds} s (bare server: the same HTTP server answering fixed bytes):"
    )
    for clients in args.clients:
        for name in urls:
            warm(urls[name], scripts[name], clients)
        runs: dict[str, list[tuple[float, float]]] = {n: [] for n in urls}
        for _ in range(args.rounds):
            for name in urls:
                runs[name].append(wrk(urls[name], scripts[name], clients, args.seconds))
        rps = {n: statistics.median(r for r, _ in v) for n, v in runs.items()}
        p99 = {n: statistics.median(p for _, p in v) for n, v in runs.items()}
        print(f"  {clients} keep-alive clients:")
        for name in urls:
            print(
                f"    {name:13} {rps[name]:9.0f} req/s   p99 {p99[name]:7.1f} ms"
                f"   req/s / nginx = {rps[name] / rps['nginx']:.2f}"
            )


def slowest(url: str, requests: int = 100) -> float:
    """The slowest of `requests` normal requests, on one keep-alive connection."""
    worst = 0.0
    with httpx.Client(base_url=url, timeout=10) as http:
        for i in range(requests):
            start = time.perf_counter()
            assert http.get(f"/api/v1/splits/train/tasks/{i}").status_code == 200
            worst = max(worst, time.perf_counter() - start)
    return worst


def idle(url: str, count: int) -> tuple[float, float]:
    """The slowest normal request without, then with, `count` connections open and silent
    (each worker warmed first: a cold one's first read would be the slowest)."""
    for _ in range(4):
        slowest(url)
    alone = slowest(url)
    port = int(url.rsplit(":", 1)[1])
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
    try:
        return alone, slowest(url)
    finally:
        for s in held:
            s.close()


def slow_filter(url: str, requests: int = 50) -> tuple[float, float]:
    """(seconds the slow filter took, slowest normal request while it ran)."""
    took: list[float] = []

    def slow() -> None:
        start = time.perf_counter()
        httpx.get(url + "/view/train", params={"where": "missing=1"}, timeout=120)
        took.append(time.perf_counter() - start)

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.05)
    slowest = 0.0
    with httpx.Client(base_url=url, timeout=10) as http:
        for i in range(requests):
            if not thread.is_alive():
                break
            start = time.perf_counter()
            http.get(f"/api/v1/splits/train/tasks/{i * 101}")
            slowest = max(slowest, time.perf_counter() - start)
    thread.join()
    return took[0], slowest


def rss_mib(pid: int) -> float:
    total = 0
    for p in [pid, *children(pid)]:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except FileNotFoundError:
            continue
        total += int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1])
    return total / 1024


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def big_file(root: Path, workers: int) -> tuple[float, float]:
    """(RSS before, RSS peak) in MiB of the server while 8 slow clients download 256 MiB."""
    import taskpack

    data = os.urandom(1 << 20) * 256
    taskpack.write(
        root / "big",
        {"train": [{"id": "big", "prompt": "p", "files": [{"path": "big.bin", "data": data}]}]},
        name="big",
    )
    sha = taskpack.open(root / "big").split("train")[0].files[0].sha256
    with served(str(root / "big"), "--workers", str(workers)) as (proc, url):
        before = rss_mib(proc.pid)
        peak = before
        done = []

        def client() -> None:
            with httpx.stream("GET", f"{url}/api/v1/files/{sha}", timeout=120) as response:
                got = 0
                for chunk in response.iter_bytes(1 << 16):
                    got += len(chunk)
                    time.sleep(0.0005)  # a slow reader
            done.append(got)

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_mib(proc.pid))
            time.sleep(0.1)
        assert done == [len(data)] * 8
        return before, peak


def versions(root: Path, count: int) -> Path:
    """A registry holding bench@1.0.0, 1.1.0 and 1.2.0: `count` tasks each, every answer
    different from one version to the next (so every task of a diff changed)."""
    import json

    from common import gsm8k_rows

    import taskpack
    from taskpack.importer import import_sources

    registry = root / "registry"
    for n, version in enumerate(("1.0.0", "1.1.0", "1.2.0")):
        source = root / f"v{n}.jsonl"
        with source.open("w") as f:
            for row in gsm8k_rows(count):
                f.write(json.dumps({**row, "answer": row["answer"] + "0" * n}) + "\n")
        import_sources(root / f"v{n}", {"train": [str(source)]}, "gsm8k", name="bench",
                       version=version)  # fmt: skip
        taskpack.publish(root / f"v{n}", registry=registry)
    return registry


def spread(url: str, count: int, tasks: int, until: Callable[[], bool] | None = None) -> float:
    """The slowest of `count` task requests spread over the whole split (index k * 7919 mod
    the split's size), one keep-alive connection, 10 ms apart; with `until`, as many as it
    takes for `until()` to turn true."""
    worst, k = 0.0, 0
    with httpx.Client(base_url=url, timeout=60) as http:
        while (k < count) if until is None else not until():
            began = time.perf_counter()
            assert http.get(f"/api/v1/splits/train/tasks/{k * 7919 % tasks}").status_code == 200
            worst = max(worst, time.perf_counter() - began)
            k += 1
            time.sleep(0.01)
    return worst


def heavy_diffs(root: Path, count: int, workers: int) -> tuple[float, float, float]:
    """(seconds the 8 diffs took, slowest of the task requests made meanwhile, slowest of the
    same requests with no diff running): a task request must not wait behind a diff. Every
    worker first reads the whole split at random, so the one-time decode of its file (about
    60 ms, on a task request of its own) is not counted on either side."""
    registry = versions(root, count)
    pairs = [(a, b) for a in ("1.0.0", "1.1.0", "1.2.0") for b in ("1.0.0", "1.1.0", "1.2.0")]
    pairs = [p for p in pairs if p[0] != p[1]] + [("this", "1.0.0"), ("1.0.0", "this")]
    with served("bench@1.2.0", "--registry", str(registry), "--workers", str(workers)) as (_, url):
        for _ in range(4 * workers):  # new connections: each worker gets some
            spread(url, 300, count)
        alone = spread(url, 1000, count)
        start = time.perf_counter()
        # Each diff asked by a curl of its own: the bytes of its answer (megabytes) take no
        # part of this process, whose task requests are timed.
        diffs = [
            subprocess.Popen(["curl", "-sf", "-o", "/dev/null", f"{url}/api/v1/diff/{a}/{b}"])
            for a, b in pairs
        ]
        worst = spread(url, 0, count, until=lambda: all(d.poll() is not None for d in diffs))
        assert [d.wait() for d in diffs] == [0] * len(diffs), "a diff failed"
        return time.perf_counter() - start, worst, alone


def robustness(args: argparse.Namespace, root: Path) -> None:
    ts = build_taskset(root / "robust", args.filter_tasks)
    with served(str(ts), "--workers", str(args.workers)) as (_, url):
        alone, crowded = idle(url, args.idle)
        print(
            f"idle: slowest of 100 requests {alone * 1000:.1f} ms alone, "
            f"{crowded * 1000:.1f} ms with {args.idle} silent connections open"
        )
        slow, worst = slow_filter(url)
        print(
            f"filter: a slow filter over {args.filter_tasks} tasks took {slow:.2f} s; "
            f"the slowest normal request meanwhile {worst * 1000:.1f} ms"
        )
    took, worst, alone = heavy_diffs(root, args.diff_tasks, args.workers)
    print(
        f"diffs: 8 diffs of {args.diff_tasks}-task versions took {took:.1f} s; the slowest task "
        f"request meanwhile {worst * 1000:.1f} ms ({alone * 1000:.1f} ms alone)"
    )
    before, peak = big_file(root, args.workers)
    print(
        f"big file: 8 slow clients of a 256 MiB file: server RSS {before:.0f} -> {peak:.0f} MiB "
        f"(+{peak - before:.0f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--clients", type=lambda s: [int(x) for x in s.split(",")], default=[64, 512]
    )
    parser.add_argument("--idle", type=int, default=300)
    parser.add_argument("--filter-tasks", type=int, default=200000)
    parser.add_argument("--diff-tasks", type=int, default=50000)
    parser.add_argument(
        "--only", choices=["throughput", "robustness", "diffs"], help="one part of the run"
    )
    args = parser.parse_args()
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install nginx wrk")
    with tempfile.TemporaryDirectory() as tmp:
        if args.only == "diffs":
            took, worst, alone = heavy_diffs(Path(tmp), args.diff_tasks, args.workers)
            print(
                f"diffs: 8 diffs of {args.diff_tasks}-task versions took {took:.1f} s; the "
                f"slowest task request meanwhile {worst * 1000:.1f} ms ({alone * 1000:.1f} ms "
                "alone)"
            )
            return
        if args.only in (None, "throughput"):
            throughput(args, Path(tmp))
        if args.only in (None, "robustness"):
            robustness(args, Path(tmp))


if __name__ == "__main__":
    main()
