"""Runs in the verl venv: verl 0.9.1's own `prime_code.compute_score`, as its
`default_compute_score` calls it (its reply reading, a process a completion, call-based tests
in LiveCodeBench's encoding) on each job, two at a time in a process pool, as verl's prime
reward manager runs it.

    python prime_code_check.py jobs.json  ->  JSON: {"seconds": ..., "passed": [...]}
"""

import contextlib
import io
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from verl.utils.reward_score import prime_code


def one(job):
    tests = {
        "fn_name": job["entry_point"],
        "inputs": ["\n".join(json.dumps(a) for a in args) for args in job["inputs"]],
        "outputs": [json.dumps(out) for out in job["outputs"]],
    }
    with contextlib.redirect_stdout(io.StringIO()):
        # continuous=True as verl's default_compute_score calls it (with False, a failing
        # program raises UnboundLocalError inside compute_score)
        success, _ = prime_code.compute_score(job["completion"], tests, continuous=True)
    return success is True or success == 1


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    start = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        passed = list(pool.map(one, jobs))
    print(json.dumps({"seconds": time.perf_counter() - start, "passed": passed}))
