"""Runs inside the verl venv: what verl 0.9.1's own reward code reads out of each reply, by its
own functions: `math_dapo` (the last `Answer:` line of the last 300 characters, normalised as
Minerva's, else the last `\\boxed{}` of the last 100) and `prime_code` (the text after the last
```python, up to the next fence).

    python check_verl_extraction.py replies.json  ->  JSON on stdout: per reply,
        {"dapo": the answer math_dapo compares, "prime_code": the code prime_code runs}
"""

import json
import sys

from verl.utils.reward_score import math_dapo

with open(sys.argv[1]) as f:
    replies = json.load(f)
out = []
for reply in replies:
    _, predicted = math_dapo.verify(reply[-300:], "")  # compute_score's own cut
    # prime_code's compute_score reads the code as this line does, then runs the tests
    code = reply.split("```python")[-1].split("```")[0]
    out.append({"dapo": predicted, "prime_code": code})
print(json.dumps({"read": out}))
