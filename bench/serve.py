"""Load test of `taskpack serve` on loopback: task-by-index requests from concurrent clients,
against the same requests for a static file of similar size from Python's own `http.server`
(what a user might otherwise put in front of exported task JSON).

    python bench/serve.py [--tasks 20000] [--requests 4000] [--clients 8]

Bounded: a fixed number of requests, each with a timeout, against 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import build_taskset


def _start(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    return proc, line.rsplit(" on ", 1)[1].strip().rstrip("/")


def load(base: str, paths: list[str], clients: int) -> dict[str, float]:
    """Send every path once, `clients` at a time (keep-alive per client); rps and latencies."""
    latencies: list[float] = []
    lock = threading.Lock()
    queue = list(paths)

    def client() -> None:
        with httpx.Client(base_url=base, timeout=10) as http:
            while True:
                with lock:
                    if not queue:
                        return
                    path = queue.pop()
                start = time.perf_counter()
                response = http.get(path)
                took = time.perf_counter() - start
                assert response.status_code == 200, response.text
                with lock:
                    latencies.append(took)

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    latencies.sort()
    return {
        "rps": len(latencies) / wall,
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[int(len(latencies) * 0.99) - 1],
    }


def main() -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        ts = build_taskset(Path(tmp) / "bench.taskset", args.tasks)
        server, url = _start([sys.executable, "-m", "taskpack", "serve", str(ts), "--port", "0"])
        static_dir = Path(tmp) / "static"
        static_dir.mkdir()
        sample = httpx.get(f"{url}/api/v1/splits/train/tasks/0").content
        (static_dir / "task.json").write_bytes(sample)
        static = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
            cwd=static_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert static.stdout is not None
        static_url = "http://127.0.0.1:" + static.stdout.readline().split(" port ")[1].split()[0]
        try:
            paths = [
                f"/api/v1/splits/train/tasks/{rng.randrange(args.tasks)}"
                for _ in range(args.requests)
            ]
            ours = load(url, paths, args.clients)
            theirs = load(static_url, ["/task.json"] * args.requests, args.clients)
        finally:
            server.terminate()
            static.terminate()
    print(
        f"taskpack serve, {args.requests} random task-by-index requests over {args.tasks} tasks, "
        f"{args.clients} keep-alive clients on 127.0.0.1:"
    )
    for name, r in (("taskpack serve", ours), ("http.server, one static file", theirs)):
        print(
            f"  {name:<30}{r['rps']:8.0f} req/s   p50 {r['p50'] * 1000:6.1f} ms"
            f"   p99 {r['p99'] * 1000:6.1f} ms   rps / static = {r['rps'] / theirs['rps']:.2f}"
        )
    return {"serve": ours, "static": theirs}


if __name__ == "__main__":
    main()
