"""Conversion benchmark: N GSM8K-shaped JSONL rows -> task set, against a hand-written pyarrow
script doing the same mapping; rows per second and peak memory (RSS) of each, in fresh processes,
alternating, several rounds, medians.

    python bench/convert.py                      # 10k and 1M rows, 3 rounds
    python bench/convert.py --rows 10000 --rounds 5
    python bench/convert.py --rows 10000,1000000 --rounds 5 --short-rounds 15  # more for 10k
    python bench/convert.py --shape nemo --rows 100000   # NeMo Gym rows, objects and floats
    python bench/convert.py --shape nemo-tools --rows 100000   # and tools, conversations

`--shape nemo`: NeMo Gym rows as its dataset scripts write them (`json.dumps`): a request of a
system and a user message, an expected answer, an `agent_ref` object and a `metadata` object
with a float; the script keeps what it does not map as JSON text, as taskpack does.
`--shape nemo-tools`: the same with a list of two function tools in every request, and every
other row a conversation of four messages (a columnar reader maps rows in groups of one shape).

Peak memory matters because importers must stream: the goals are the 1M peak within 2x the 10k
peak, and at least the hand-written script's rows per second (GSM8K has a columnar reader; see
taskpack/converters/_columnar/).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
from pathlib import Path

from common import peak_process

OURS = """
import sys
from taskpack.importer import import_sources
import_sources(sys.argv[2], {"train": [sys.argv[1]]}, sys.argv[3], name="bench")
"""

# What a user would write by hand: parse each line, map it, write Parquet in batches.
BASELINE = """
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
schema = pa.schema([("id", pa.string()),
    ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("answer", pa.string()), ("solution", pa.string()), ("reward", pa.string())])
writer = pq.ParquetWriter(sys.argv[2], schema, compression="zstd")
rows = []
with open(sys.argv[1], "rb") as f:
    for n, line in enumerate(f):
        r = json.loads(line)
        final = r["answer"].rsplit("####", 1)[1].strip().replace(",", "")
        prompt = [{"role": "user", "content": r["question"]}]
        rows.append({"id": f"train-{n:05d}", "prompt": prompt, "answer": final,
                     "solution": r["answer"], "reward": '{"kind":"numeric_match"}'})
        if len(rows) == 1024:
            writer.write_table(pa.Table.from_pylist(rows, schema)); rows = []
if rows:
    writer.write_table(pa.Table.from_pylist(rows, schema))
writer.close()
"""


NEMO_BASELINE = """
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
schema = pa.schema([("id", pa.string()),
    ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("answer", pa.string()), ("tools", pa.string()), ("extras", pa.string())])
writer = pq.ParquetWriter(sys.argv[2], schema, compression="zstd")
rows = []
with open(sys.argv[1], "rb") as f:
    for n, line in enumerate(f):
        r = json.loads(line)
        params = r.pop("responses_create_params")
        prompt = params["input"]
        tools = json.dumps(params.get("tools", []))
        answer = json.dumps(r.pop("expected_answer"))
        extras = json.dumps({"nemo": r}, separators=(",", ":"), ensure_ascii=False)
        rows.append(
            {"id": f"train-{n:05d}", "prompt": prompt, "answer": answer, "tools": tools,
             "extras": extras})
        if len(rows) == 1024:
            writer.write_table(pa.Table.from_pylist(rows, schema)); rows = []
if rows:
    writer.write_table(pa.Table.from_pylist(rows, schema))
writer.close()
"""


TOOLS = [
    {
        "type": "function",
        "name": name,
        "description": f"{name.title()} two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        "strict": True,
    }
    for name in ("add", "multiply")
]


def make_nemo_source(path: Path, rows: int, odd: int = 0, tools: bool = False) -> None:
    """`rows` NeMo Gym rows; `odd` of them, evenly spread, hold their `agent_ref` keys the
    other way round (the row path keeps each row's order, so that batch's objects are read
    from the row path's reading). With `tools`, every request offers TOOLS and every other row
    is a conversation of four messages."""
    rng = random.Random(rows)
    every = rows // odd if odd else 0
    with path.open("w", encoding="utf-8") as f:
        for i in range(rows):
            a, b = rng.randint(1, 10**4), rng.randint(1, 10**4)
            ref = {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"}
            if every and i % every == every // 2:
                ref = dict(reversed(ref.items()))
            said = [
                {"role": "system", "content": "Put the final answer in \\boxed{}."},
                {"role": "user", "content": f"What is {a} + {b}? (#{i})"},
            ]
            request: dict[str, object] = {"input": said}
            if tools:
                request["tools"] = TOOLS
                if i % 2:
                    said[1:1] = [
                        {"role": "user", "content": "What is 2 + 2?"},
                        {"role": "assistant", "content": "\\boxed{4}"},
                    ]
            row = {
                "responses_create_params": request,
                "expected_answer": str(a + b),
                "agent_ref": ref,
                "metadata": {"source": "synthetic", "level": rng.randint(1, 5), "p": 0.25},
            }
            f.write(json.dumps(row) + "\n")


def make_source(path: Path, rows: int, odd: int = 0) -> None:
    """`rows` GSM8K rows; `odd` of them, evenly spread, end in a no-break space (valid, and
    Python's `strip` removes it, but no columnar check vouches for a final answer not in ASCII,
    so the rows around each go row by row)."""
    rng = random.Random(rows)
    every = rows // odd if odd else 0
    with path.open("w", encoding="utf-8") as f:
        for i in range(rows):
            a, b = rng.randint(1, 10**4), rng.randint(1, 10**4)
            question = f"Tom has {a} apples and buys {b} more. How many apples now? (#{i})"
            answer = f"He has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} apples.\n#### {a + b:,}"
            if every and i % every == every // 2:
                answer += "\u00a0"
            f.write(json.dumps({"question": question, "answer": answer}) + "\n")


# Sources under this many rows get --short-rounds.
SHORT = 100_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--short-rounds",
        type=int,
        help=f"rounds for sources under {SHORT:,} rows (default: --rounds): a run of under a "
        "second moves by tens of milliseconds with the machine, the same for both sides",
    )
    parser.add_argument("--odd", type=int, default=0, help="rows no columnar check takes")
    parser.add_argument("--shape", choices=("gsm8k", "nemo", "nemo-tools"), default="gsm8k")
    args = parser.parse_args()
    fmt = args.shape.split("-")[0]
    make, baseline = {
        "gsm8k": (make_source, BASELINE),
        "nemo": (make_nemo_source, NEMO_BASELINE),
        "nemo-tools": (functools.partial(make_nemo_source, tools=True), NEMO_BASELINE),
    }[args.shape]
    sizes = [int(x) for x in args.rows.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            source = Path(tmp) / f"{args.shape}-{rows}.jsonl"
            make(source, rows, args.odd)
            times: dict[str, list[float]] = {"taskpack": [], "pyarrow script": []}
            peaks: dict[str, list[float]] = {"taskpack": [], "pyarrow script": []}
            short = rows < SHORT and args.short_rounds is not None
            for r in range(args.short_rounds if short else args.rounds):
                for name, script in (("taskpack", OURS), ("pyarrow script", baseline)):
                    out = Path(tmp) / f"out-{name.split()[0]}-{rows}-{r}"
                    seconds, peak = peak_process(script, str(source), str(out), fmt)
                    times[name].append(seconds)
                    peaks[name].append(peak)
            results[rows] = {
                name: (rows / statistics.median(times[name]), statistics.median(peaks[name]))
                for name in times
            }
            source.unlink()
    print(f"{args.shape} rows:")
    if args.short_rounds is not None:
        print(f"medians of {args.short_rounds} rounds under {SHORT:,} rows, else of {args.rounds}")
    if args.odd:
        print(f"sources with {args.odd} rows no batch check takes, evenly spread:")
    print(
        f"{'rows':>9} {'taskpack rows/s':>16} {'script rows/s':>14} {'ratio':>6} "
        f"{'taskpack MiB':>13} {'script MiB':>11}"
    )
    for rows, res in results.items():
        (ours, our_peak), (base, base_peak) = res["taskpack"], res["pyarrow script"]
        print(
            f"{rows:>9} {ours:>16.0f} {base:>14.0f} {ours / base:>6.2f} "
            f"{our_peak:>13.0f} {base_peak:>11.0f}"
        )
    if len(sizes) > 1:
        small, large = results[min(sizes)]["taskpack"][1], results[max(sizes)]["taskpack"][1]
        print(f"taskpack peak memory, {max(sizes)} rows / {min(sizes)} rows: {large / small:.2f}x")


if __name__ == "__main__":
    main()
