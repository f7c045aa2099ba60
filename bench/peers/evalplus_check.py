"""Runs in the evalplus venv: EvalPlus 0.3.1's own `untrusted_check` (a forked process a
completion, EvalPlus's reliability guard, its per-input limits) on each job, two at a time as
`evalplus.evaluate --parallel 2` runs them; the code is read out of the reply by its own
`sanitize`, as its harness does.

    python evalplus_check.py jobs.json  ->  JSON: {"seconds": ..., "passed": [...]}
"""

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from evalplus.eval import PASS, untrusted_check
from evalplus.sanitize import sanitize

with open(sys.argv[1]) as f:
    jobs = json.load(f)


def one(job):
    code = sanitize(job["completion"], job["entry_point"])
    inputs = job["inputs"]
    stat, _ = untrusted_check(
        "humaneval", code, inputs, job["entry_point"], job["outputs"], 0, [0.01] * len(inputs)
    )
    return stat == PASS


start = time.perf_counter()
with ThreadPoolExecutor(2) as pool:
    passed = list(pool.map(one, jobs))
print(json.dumps({"seconds": time.perf_counter() - start, "passed": passed}))
