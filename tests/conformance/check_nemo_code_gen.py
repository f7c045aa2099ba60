"""Runs inside the nemo venv: NeMo Gym 0.7's `code_gen` resources server's own grading of a
row, without its Ray and HTTP wrapping: `verifier_metadata.unit_tests` validated by the
server's `UnitTests` model, the code read out of the reply by its `extract_code`
(LMStyle.OpenAIChat), and LiveCodeBench's `check_correctness` as vendored there; the reward
is 1.0 when every test passed, as its `verify` gives it.

    python check_nemo_code_gen.py FILE.jsonl REPLIES.json  ->  JSON: {"rewards": [...]}
REPLIES.json: [[row, reply], ...]
"""

import json
import sys

import resources_servers.code_gen as package

sys.path.insert(0, next(iter(package.__path__)))  # the server imports its helpers from there
from lcb_integration.compute_code_generation_metrics import check_correctness
from lcb_integration.extraction_utils import LMStyle, extract_code
from resources_servers.code_gen.app import UnitTests

with open(sys.argv[1]) as f:
    rows = [json.loads(line) for line in f]
with open(sys.argv[2]) as f:
    replies = json.load(f)
rewards = []
for row, reply in replies:
    tests = UnitTests.model_validate(rows[row]["verifier_metadata"]["unit_tests"])
    code = extract_code(reply, LMStyle.OpenAIChat)
    result, _ = check_correctness({"input_output": tests.model_dump_json()}, code, 10, False)
    rewards.append(1.0 if all(r == True for r in result) else 0.0)  # noqa: E712 - as code_gen
print(json.dumps({"rewards": rewards}))
