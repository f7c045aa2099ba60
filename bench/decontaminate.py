"""Decontamination speed, in µs per training document, in one run: taskpack's n-gram matching
(`taskpack.curation.overlap.contamination`), the plain Python a user would write from open-r1's
`decontaminate.py` (every n-gram a string, one set lookup each), and decon's Python bindings
(`decontaminate` 0.3.0.post4, Rust, in a Python 3.12 venv of its own).

    python bench/decontaminate.py --copies 4 --rounds 3

Documents: GSM8K's train questions, `--copies` times over (each copy's words shuffled within
a sentence but the first, so copies are different texts of the same size); references:
GSM8K's test questions and HumanEval's prompts, `--planted` of them also copied verbatim
into the documents (a hit every tool must find). taskpack and the plain code must find the
same hits (checked); decon's rule differs (cl100k tokens, sampled n-grams, a score threshold),
so its hits are printed as context, not compared. Each figure is the median of the rounds,
timed inside the process that does the work: texts in memory for taskpack and the plain code,
JSONL files read by decon (its only interface) with its default threads (one per core),
interpreter start excluded for all.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import ROOT, machine  # noqa: E402

sys.path.insert(0, str(ROOT))
from taskpack.curation.overlap import contamination  # noqa: E402
from tests.openr1_rule import plain_hits  # noqa: E402

DATA = ROOT.parent / "shared" / "data"

DECON = """
import json, sys, time, decon
train, evals, out = sys.argv[1:4]
config = decon.Config(training_dir=train, evals_dir=evals, report_output_dir=out,
                      ngram_size=int(sys.argv[4]))
start = time.perf_counter()
decon.detect(config)
seconds = time.perf_counter() - start
import pathlib
hits = sum(1 for p in pathlib.Path(out).rglob("*.jsonl") for line in p.open() if line.strip())
print(json.dumps({"seconds": seconds, "hits": hits}))
"""


def documents(copies: int, refs: dict[str, str], planted: int) -> dict[str, str]:
    rng = random.Random(0)
    rows = [json.loads(line)["question"] for line in (DATA / "gsm8k" / "train.jsonl").open()]
    docs = {f"train-{i}": q for i, q in enumerate(rows)}
    for i, key in enumerate(rng.sample(sorted(refs), planted)):  # verbatim: every tool's hit
        docs[f"planted-{i}"] = refs[key]
    for c in range(1, copies):
        for i, q in enumerate(rows):
            head, _, tail = q.partition(". ")
            words = tail.split()
            rng.shuffle(words)
            docs[f"copy{c}-{i}"] = f"{head}. {' '.join(words)}"
    return docs


def references() -> dict[str, str]:
    refs = {
        f"gsm8k-test-{i}": json.loads(line)["question"]
        for i, line in enumerate((DATA / "gsm8k" / "test.jsonl").open())
    }
    with gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt") as f:
        refs.update({(row := json.loads(line))["task_id"]: row["prompt"] for line in f})
    return refs


def decon_run(docs: dict[str, str], refs: dict[str, str], n: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.conformance.frameworks import ensure

    python = ensure("decon")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for sub in ("train", "evals", "out"):
            (root / sub).mkdir()
        with (root / "train" / "docs.jsonl").open("w") as f:
            for text in docs.values():
                f.write(json.dumps({"text": text}) + "\n")
        with (root / "evals" / "refs.jsonl").open("w") as f:
            for i, (key, text) in enumerate(refs.items()):
                row = {"doc_id": i, "question": text, "eval_key": key.split("-")[0]}
                f.write(json.dumps(row) + "\n")
        run = subprocess.run(
            [
                str(python),
                "-c",
                DECON,
                str(root / "train"),
                str(root / "evals"),
                str(root / "out"),
                str(n),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ngram", type=int, default=8)
    parser.add_argument("--planted", type=int, default=20, help="References copied in verbatim.")
    args = parser.parse_args()
    refs = references()
    docs = documents(args.copies, refs, args.planted)
    times: dict[str, list[float]] = {"taskpack": [], "plain Python": [], "decon": []}
    found: dict[str, int] = {}
    for _ in range(args.rounds):
        start = time.perf_counter()
        ours = contamination(docs, refs, args.ngram)
        times["taskpack"].append(time.perf_counter() - start)
        start = time.perf_counter()
        theirs = set(plain_hits(docs, refs, args.ngram))
        times["plain Python"].append(time.perf_counter() - start)
        assert {(h.key, h.ref) for h in ours} == theirs, "taskpack and plain Python disagree"
        found["taskpack"] = found["plain Python"] = len(ours)
        result = decon_run(docs, refs, args.ngram)
        times["decon"].append(result["seconds"])
        found["decon"] = result["hits"]
    print(
        f"decontaminate {len(docs)} documents against {len(refs)} references, "
        f"{args.ngram}-grams, {machine()} (median of {args.rounds}):"
    )
    base = statistics.median(times["taskpack"])
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"  {name:<14}{median * 1e6 / len(docs):8.1f} us/doc   "
            f"this / taskpack = {median / base:5.2f}   hits {found[name]}"
        )


if __name__ == "__main__":
    main()
