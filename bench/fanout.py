"""Fan-out: N processes start at once on a cold cache and each reads task 0 of one split from
a real S3 server. Reports bytes fetched against the version's size (goal <= 1.05x: one download
per object per machine) and p50 / p99 time to first task.

    python bench/fanout.py [--processes 64] [--tasks 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import build_taskset, s3_client, s3_server

# Counts what each process downloads, at the store, by the bytes written.
READER = """
import json, os, sys, time
from taskpack.registry import s3
real = s3.S3Store.download
def counted(self, key, dest, progress=None):
    real(self, key, dest, progress)
    with open(sys.argv[2], "a") as log:
        log.write(json.dumps([key, os.path.getsize(dest)]) + "\\n")
s3.S3Store.download = counted
import taskpack
task = taskpack.load("bench@1.0.0", split="train", registry=sys.argv[1])[0]
print(json.dumps({"t": time.time(), "id": task.id}))
"""


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--tasks", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = s3_server(tmp / "s3")
        try:
            import taskpack

            ts = build_taskset(tmp / "bench.taskset", args.tasks)
            s3_client().create_bucket(Bucket="fanout")
            taskpack.publish(ts, registry="s3://fanout/reg")
            version_bytes = sum(s.bytes for s in taskpack.open(ts).manifest.splits.values())
            log = tmp / "downloads.log"
            env = {"TASKPACK_CACHE": str(tmp / "cache")}
            import os

            started = time.time()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", READER, "s3://fanout/reg", str(log)],
                    stdout=subprocess.PIPE,
                    env={**os.environ, **env},
                    text=True,
                )
                for _ in range(args.processes)
            ]
            firsts = []
            for proc in procs:
                out, _ = proc.communicate(timeout=600)
                if proc.returncode != 0:
                    raise SystemExit("a reader failed")
                firsts.append(json.loads(out)["t"] - started)
            fetched = sum(size for _, size in map(json.loads, log.read_text().splitlines()))
        finally:
            server.stop()
    firsts.sort()
    p99 = firsts[min(len(firsts) - 1, round(0.99 * (len(firsts) - 1)))]
    result = {
        "bytes_ratio": fetched / version_bytes,
        "p50_s": statistics.median(firsts),
        "p99_s": p99,
    }
    print(
        f"fan-out: {args.processes} processes on a cold cache, S3 on 127.0.0.1, "
        f"{args.tasks} tasks ({version_bytes / 1e6:.1f} MB version):"
    )
    print(f"  bytes fetched / version size   {result['bytes_ratio']:.3f}")
    p50, p99 = result["p50_s"], result["p99_s"]
    print(f"  time to first task             p50 {p50:.2f} s   p99 {p99:.2f} s")
    return result


if __name__ == "__main__":
    main()
