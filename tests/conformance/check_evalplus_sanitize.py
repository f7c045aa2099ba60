"""Runs inside the evalplus venv: EvalPlus 0.3.1's own `sanitize` (how its harness reads a
model's code out of a reply: the longest syntactically valid run of lines, then only the entry
point and what it uses) on each (reply, entry point).

    python check_evalplus_sanitize.py replies.json  ->  JSON on stdout: {"code": [...]}
"""

import json
import sys

from evalplus.sanitize import sanitize

with open(sys.argv[1]) as f:
    replies = json.load(f)
print(json.dumps({"code": [sanitize(reply, entry) for reply, entry in replies]}))
