"""Load test of `taskpack serve` on loopback, beside what a user would otherwise run.

verbs   ORS `task` by random index (POST, keep-alive clients, wrk) from `taskpack serve`,
        ors-sdk 0.1.0's own server and OpenEnv 0.10's Harbor task server (both on uvicorn,
        each in its pinned venv, the same number of workers) over the same tasks, and nginx
        (Debian's) serving taskpack's answers as static files (GET: the floor). Each warmed
        until its rate settles; rounds alternate; medians of requests/s and p99 latency.
flood   a 100,000-task split; 8 clients (wrk) flooding one heavy route at a time (ORS `tasks`,
        `task_range 0..10^9`, the viewer's search with a new query every time, sort, a `where`
        filter, id pages); meanwhile one client asks for tasks at random: its p50 and p99, and
        the server's peak RSS (its workers and the lane's processes).
robust  idle connections, 8 slow clients of a 256 MiB file, 8 diffs of 50k-task versions.

    apt-get install nginx wrk
    python bench/serve.py [--tasks 10000] [--flood-tasks 100000] [--only verbs|flood|robust]

Bounded: fixed durations, timeouts on every request, 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
from common import ROOT, build_taskset, machine, peak_process, served

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
# A random task of the split per request: GET PREFIX<index>, or POST PATH {"split", "index"}.
GET = """math.randomseed({seed})
request = function()
  return wrk.format("GET", string.format("{prefix}%d", math.random(0, {last})))
end
"""
POST = """math.randomseed({seed})
local headers = {{["Content-Type"] = "application/json", ["X-Session-ID"] = "s"}}
request = function()
  local body = string.format('{{"split": "{split}", "index": %d}}', math.random(0, {last}))
  return wrk.format("POST", "{path}", headers, body)
end
"""
# The peers, each a uvicorn of its own in its framework's venv: ors-sdk's Server over an
# environment listing the tasks as taskpack's ORS verbs give them, and OpenEnv's Harbor app
# over the same tasks exported as Harbor task folders.
ORS_PEER = """import json, os
from ors import Environment, Server, TextBlock, ToolOutput, tool
from pydantic import BaseModel
with open(os.environ["SPECS"]) as f:
    SPECS = json.load(f)
class Answer(BaseModel):
    answer: str
class Bench(Environment):
    @classmethod
    def list_splits(cls):
        return ["train"]
    @classmethod
    def list_tasks(cls, split):
        return SPECS
    @classmethod
    def name(cls):
        return "bench"
    def get_prompt(self):
        return [TextBlock(text="")]
    @tool
    def submit(self, params: Answer) -> ToolOutput:
        \"\"\"Submit an answer.\"\"\"
        return ToolOutput(blocks=[TextBlock(text=params.answer)], reward=0.0, finished=True)
app = Server([Bench]).app
"""
OPENENV_PEER = """import logging, os
from openenv.harbor.serving import build_app
logging.disable(logging.CRITICAL)
app = build_app(datasets=[os.environ["TASKS"]])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answering(
    proc: subprocess.Popen[bytes], port: int, what: str, tries: int
) -> tuple[subprocess.Popen[bytes], str]:
    """`proc` and its URL once it answers on `port` (any HTTP answer), polled `tries` times."""
    url = f"http://127.0.0.1:{port}"
    for _ in range(tries):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} ended (exit code {proc.returncode})")
        try:
            httpx.get(url + "/", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")


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


def start_peer(
    framework: str, code: str, root: Path, workers: int, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], str]:
    """A peer's app (`code`, defining `app`) under uvicorn in its framework's pinned venv."""
    sys.path.insert(0, str(ROOT))
    from tests.conformance.frameworks import ensure

    python = ensure(framework)
    root.mkdir(parents=True, exist_ok=True)
    (root / "peer.py").write_text(code)
    port = free_port()
    command = [str(python), "-m", "uvicorn", "peer:app", "--port", str(port), "--workers",
               str(workers), "--log-level", "critical", "--no-access-log"]  # fmt: skip
    quiet = {"ORS_LOG_LEVEL": "WARNING"}  # ors-sdk logs each request at INFO otherwise
    proc = subprocess.Popen(command, cwd=root, env={**os.environ, **quiet, **env})
    return answering(proc, port, framework, tries=1200)


def warm(url: str, script: Path, clients: int, most: int = 10) -> None:
    """Short runs until the rate stops rising by 5%: connections made, and every task read
    once in each worker (as a server that has run a while has them)."""
    last = 0.0
    for _ in range(most):
        rate = wrk(url, script, clients, 2)[0]
        if rate < last * 1.05:
            return
        last = rate


def wrk(
    url: str, script: Path, clients: int, seconds: int, strict: bool = True, timeout: int = 10
) -> tuple[float, float]:
    """(requests/s, p99 ms) of one wrk run; with `strict`, a non-2xx answer fails the run."""
    threads = str(min(clients, 2))
    out = subprocess.run(
        ["wrk", "-t", threads, "-c", str(clients), "-d", f"{seconds}s", "--latency",
         "--timeout", f"{timeout}s", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    if strict and ("Non-2xx" in out or ("Socket errors" in out and "timeout" in out)):
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    value = float(p99.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)] if p99 else 0.0
    return rps, value


def verbs(args: argparse.Namespace, root: Path) -> None:
    """ORS `task` by index: taskpack, its two peers and nginx, side by side."""
    import taskpack
    from taskpack.exporter import export

    ts = build_taskset(root / "ts", args.tasks)
    w = str(args.workers)
    with served(str(ts), "--workers", w) as (_, url):
        static = root / "nginx" / "static" / "t"
        static.mkdir(parents=True)
        specs = []
        with httpx.Client(base_url=url, timeout=30) as http:  # the very bytes it answers
            for i in range(args.tasks):
                body = {"split": "train", "index": i}
                answer = http.post("/ors/bench/task", json=body).content
                (static / str(i)).write_bytes(answer)
                specs.append(json.loads(answer)["task"])
        (root / "specs.json").write_text(json.dumps(specs))
        harbor = root / "harbor"
        export(taskpack.open(ts), "harbor", harbor)
        tasks = next(p for p in (harbor / "train", harbor) if p.is_dir())
        procs = []
        try:
            nginx, nginx_url = start_nginx(root / "nginx", args.workers)
            procs.append(nginx)
            ors, ors_url = start_peer(
                "ors", ORS_PEER, root / "ors", args.workers, {"SPECS": str(root / "specs.json")}
            )
            procs.append(ors)
            openenv, openenv_url = start_peer(
                "openenv", OPENENV_PEER, root / "openenv", args.workers, {"TASKS": str(tasks)}
            )
            procs.append(openenv)
            last = args.tasks - 1
            servers = {
                "taskpack": (url, POST.format(seed=7, split="train", path="/ors/bench/task",
                                              last=last)),
                "taskpack GET": (url, GET.format(seed=7, prefix="/api/v1/splits/train/tasks/",
                                                 last=last)),
                "ors-sdk": (ors_url, POST.format(seed=7, split="train", path="/bench/task",
                                                 last=last)),
                "openenv": (openenv_url, POST.format(seed=7, split=str(tasks),
                                                     path="/harbor_env/task", last=last)),
                "nginx": (nginx_url, GET.format(seed=7, prefix="/t/", last=last)),
            }  # fmt: skip
            compared(args, root, servers)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()


def compared(args: argparse.Namespace, root: Path, servers: dict[str, tuple[str, str]]) -> None:
    """Each server's requests/s and p99 at each number of clients, rounds alternating."""
    scripts = {}
    for name, (_, lua) in servers.items():
        scripts[name] = root / f"{name}.lua"
        scripts[name].write_text(lua)
    print(
        f"ORS task by index, {args.tasks} tasks, {args.workers} workers each, {machine()}; "
        f"each warmed until its rate settles, then median of {args.rounds} rounds of "
        f"{args.seconds} s (nginx: taskpack's answers as static files, GET):"
    )
    for clients in args.clients:
        for name, (url, _) in servers.items():
            warm(url, scripts[name], clients)
        runs: dict[str, list[tuple[float, float]]] = {n: [] for n in servers}
        for _ in range(args.rounds):
            for name, (url, _) in servers.items():
                runs[name].append(wrk(url, scripts[name], clients, args.seconds))
        rps = {n: statistics.median(r for r, _ in v) for n, v in runs.items()}
        p99 = {n: statistics.median(p for _, p in v) for n, v in runs.items()}
        print(f"  {clients} keep-alive clients:")
        for name in servers:
            print(
                f"    {name:12} {rps[name]:9.0f} req/s   p99 {p99[name]:8.1f} ms"
                f"   req/s / nginx = {rps[name] / rps['nginx']:.2f}"
                f"   taskpack / this = {rps['taskpack'] / rps[name]:.2f}"
            )


# --- the flood -------------------------------------------------------------------------------

SPLIT = '{"split": "train"}'
FLOODS = {
    "ORS tasks": ("POST", "/ors/bench/tasks", SPLIT),
    "ORS task_range 0..10^9": (
        "POST", "/ors/bench/task_range", '{"split": "train", "start": 0, "stop": 1000000000}'
    ),
    "search, a new query each": ("GET", "/view/train?q=%d", ""),
    "sort by prompt, a page each": ("GET", "/view/train?sort=prompt&page=%d", ""),
    "where filter, a new value each": ("GET", "/view/train?where=answer=%d", ""),
    "ids, a page each": ("GET", "/api/v1/splits/train/ids?limit=1000&offset=%d", ""),
}  # fmt: skip
FLOOD = """math.randomseed({seed})
local headers = {{["Content-Type"] = "application/json"}}
request = function()
  local path = string.gsub("{path}", "%%d", tostring(math.random(0, {last})))
  if "{method}" == "POST" then return wrk.format("POST", path, headers, '{body}') end
  return wrk.format("GET", path)
end
"""


def flood(args: argparse.Namespace, root: Path) -> None:
    """8 clients on each heavy route in turn; the plain requests' latency meanwhile."""
    ts = build_taskset(root / "flood", args.flood_tasks)
    print(
        f"flood: {args.flood_tasks} tasks, taskpack serve --workers {args.workers}, {machine()}; "
        f"8 clients on one route for {args.flood_seconds} s, one client asking tasks at "
        "random meanwhile:"
    )
    writer_peaks(root, ts, args.flood_tasks)
    with served(str(ts), "--workers", str(args.workers)) as (proc, url):
        for _ in range(4 * args.workers):  # each worker has read the split once
            spread(url, 200, args.flood_tasks)
        alone = plain(url, args.flood_tasks, lambda: False, 500)
        print(f"  {'nothing else':32} plain p50 {alone[0]:6.1f} ms  p99 {alone[1]:6.1f} ms  "
              f"RSS {rss_mib(proc.pid):6.0f} MiB")  # fmt: skip
        for name, (method, path, body) in FLOODS.items():
            if args.flood_routes and not name.startswith(tuple(args.flood_routes)):
                continue
            script = root / "flood.lua"
            last = args.flood_tasks // 1000 if "offset" not in path else args.flood_tasks
            script.write_text(FLOOD.format(seed=11, path=path, method=method, body=body, last=last))
            p50, p99, count, peak, rate = flooded(url, proc.pid, script, args)
            print(f"  {name:32} plain p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  ({count} asked)  "
                  f"peak RSS {peak:6.0f} MiB  flood {rate:8.1f} answers/s")  # fmt: skip


# The lane's writer of ORS `tasks`, alone in a process: its peak RSS for a split's size.
WRITER = """import sys, time
from pathlib import Path
import taskpack
from taskpack.serve.jobs import ors_tasks
from taskpack.serve.lane import ServedVersion, Work
ts = taskpack.open(sys.argv[1])
served = ServedVersion(sys.argv[1], None, ts.manifest.name, ts.manifest.digest)
ors_tasks(Work(Path(sys.argv[2]), time.time() + 3600), served, "train", 0,
          len(ts.split("train")), "bench")
"""


def writer_peaks(root: Path, big: Path, tasks: int) -> None:
    """The peak RSS of the process writing ORS `tasks`, for the flood's split and one a tenth
    its size: what the answer costs in memory does not grow with the split."""
    small = build_taskset(root / "small", tasks // 10)
    found = []
    for ts, n in ((small, tasks // 10), (big, tasks)):
        seconds, mib = peak_process(WRITER, str(ts), str(root / f"answer-{n}"))
        size = (root / f"answer-{n}.json").stat().st_size
        found.append(
            f"{n} tasks: {mib:.0f} MiB peak, {seconds:.1f} s, {size / 2**20:.0f} MiB written"
        )
    print(f"  ORS tasks, written by the lane alone: {'; '.join(found)}")


def flooded(
    url: str, pid: int, script: Path, args: argparse.Namespace
) -> tuple[float, float, int, float, float]:
    """(p50 ms, p99 ms, count) of plain requests while wrk runs `script` on 8 connections,
    the server's peak RSS (MiB, sampled every 250 ms), and the flood's answers a second."""
    peak, done = [rss_mib(pid)], threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            peak.append(rss_mib(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    seconds, rate = args.flood_seconds, []
    runner = threading.Thread(
        target=lambda: rate.append(wrk(url, script, 8, seconds, False, 120)[0])
    )
    runner.start()
    time.sleep(0.5)
    p50, p99, count = plain(url, args.flood_tasks, lambda: not runner.is_alive())
    runner.join()
    done.set()
    sampler.join()
    return p50, p99, count, max(peak), rate[0]


def plain(
    url: str, tasks: int, until: Callable[[], bool], most: int = 1_000_000
) -> tuple[float, float, int]:
    """(p50 ms, p99 ms, count) of task requests at random, one at a time, 10 ms apart."""
    took: list[float] = []
    rng = random.Random(3)
    with httpx.Client(base_url=url, timeout=120) as http:
        while not until() and len(took) < most:
            began = time.perf_counter()
            assert http.get(f"/api/v1/splits/train/tasks/{rng.randrange(tasks)}").status_code == 200
            took.append((time.perf_counter() - began) * 1000)
            time.sleep(0.01)
    took.sort()
    return took[len(took) // 2], took[min(len(took) - 1, int(len(took) * 0.99))], len(took)


# --- what it withstands ----------------------------------------------------------------------


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


def rss_mib(pid: int) -> float:
    total = 0
    for p in [pid, *children(pid)]:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except FileNotFoundError:
            continue
        found = [x for x in status.splitlines() if x.startswith("VmRSS")]  # none: a zombie
        total += int(found[0].split()[1]) if found else 0
    return total / 1024


def children(pid: int) -> list[int]:
    """Every process below `pid`: the server's workers and their lane processes."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    direct = [int(x) for x in out.split()]
    return direct + [p for child in direct for p in children(child)]


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


def robust(args: argparse.Namespace, root: Path) -> None:
    ts = build_taskset(root / "robust", args.tasks)
    with served(str(ts), "--workers", str(args.workers)) as (_, url):
        alone, crowded = idle(url, args.idle)
        print(
            f"idle: slowest of 100 requests {alone * 1000:.1f} ms alone, "
            f"{crowded * 1000:.1f} ms with {args.idle} silent connections open"
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
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[64])
    parser.add_argument("--flood-tasks", type=int, default=100000)
    parser.add_argument("--flood-seconds", type=int, default=30)
    parser.add_argument(
        "--flood-routes", type=lambda s: s.split(","), default=[], help="e.g. 'ORS,search'"
    )
    parser.add_argument("--idle", type=int, default=300)
    parser.add_argument("--diff-tasks", type=int, default=50000)
    parser.add_argument("--only", choices=["verbs", "flood", "robust"], help="one part of the run")
    args = parser.parse_args()
    for tool in ("nginx", "wrk", "curl"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install nginx wrk curl")
    with tempfile.TemporaryDirectory() as tmp:
        for part, run in (("verbs", verbs), ("flood", flood), ("robust", robust)):
            if args.only in (None, part):
                (Path(tmp) / part).mkdir()
                run(args, Path(tmp) / part)


if __name__ == "__main__":
    main()
