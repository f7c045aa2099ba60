"""A registry's catalog at 1,000 sets: how long `GET /api/v1/sets` takes on `taskpack serve
--registry R` once each version's summary is kept (rebuilt from the listings every request:
ttl 0), with a search and with a facet, against `taskpack ls --registry R` (the names and
highest versions, from a fresh process: what a user had before), and the first listing, which
reads every version once.

    python bench/catalog.py [--sets 1000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

LICENSES = ("MIT", "Apache-2.0", "CC-BY-4.0", None)
KINDS = ("numeric_match", "exact_match", "math_match")


def registry(root: Path, count: int) -> Path:
    """`count` sets of 5 tasks each, in a registry folder: licenses and reward kinds vary."""
    import taskpack

    reg = root / "registry"
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        tasks = [
            {"id": f"t{k}", "prompt": f"set {i} task {k}", "answer": str(k),
             "reward": {"kind": kind}}
            for k in range(5)
        ]  # fmt: skip
        path = root / "sets" / f"s{i:04d}"
        taskpack.write(
            path, {"test": tasks}, name=f"set-{i:04d}", version="1.0.0",
            license=LICENSES[i % len(LICENSES)], description=f"synthetic set number {i}",
        )  # fmt: skip
        taskpack.publish(path, registry=str(reg))
    return reg


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    from taskpack.registry.cache import Cache
    from taskpack.registry.mirror import Mirror
    from taskpack.serve.app import App, Registered
    from taskpack.serve.server import background

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        start = time.perf_counter()
        reg = registry(tmp, args.sets)
        built = time.perf_counter() - start
        app = App(registered=Registered(Mirror(str(reg), Cache(tmp / "cache"), ttl=0)))
        results: dict[str, float] = {}
        with background(app) as url:

            def get(query: str) -> float:
                start = time.perf_counter()
                with urllib.request.urlopen(f"{url}/api/v1/sets{query}", timeout=600) as r:
                    body = json.loads(r.read())
                seconds = time.perf_counter() - start
                assert body["total"] >= 1, query
                return seconds

            results["first listing (reads every version)"] = get("")
            for name, query in (
                ("listing", ""),
                ("search q=number 7", "?q=number+7"),
                ("facet license=MIT", "?license=MIT"),
            ):
                results[name] = statistics.median(get(query) for _ in range(args.rounds))
            ls = [sys.executable, "-m", "taskpack", "ls", "--registry", str(reg)]

            def listed() -> float:
                start = time.perf_counter()
                subprocess.run(ls, check=True, capture_output=True)
                return time.perf_counter() - start

            results["taskpack ls (fresh process)"] = statistics.median(
                listed() for _ in range(max(3, args.rounds // 3))
            )
    print(
        f"{machine()}; a registry folder of {args.sets} sets (published in {built:.0f} s), "
        f"served by `taskpack serve --registry` rebuilding its listing on every request "
        f"(median of {args.rounds}):"
    )
    base = results["taskpack ls (fresh process)"]
    for name, seconds in results.items():
        print(f"  {name:38} {seconds * 1000:8.0f} ms   / taskpack ls = {seconds / base:5.2f}")
    return results


if __name__ == "__main__":
    main()
