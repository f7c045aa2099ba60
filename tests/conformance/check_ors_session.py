"""Runs inside the ors-sdk venv (or the openreward one): the framework's own client, unmodified,
runs episodes on a `taskpack serve`: for each answer, a session on task INDEX of SPLIT, its
prompt and tools read, the answer given through the `answer` tool, and the result kept.

    python check_ors_session.py ors|openreward URL ENV SPLIT INDEX ANSWERS.json
        ->  JSON on stdout: {"prompt": [texts], "tools": [names], "results": [{reward, ...}]}
"""

import json
import os
import sys
from pathlib import Path

kind, url, name, split, index, answers = sys.argv[1:7]
if kind == "ors":
    from ors.client import ORS

    client = ORS(base_url=url)  # kept: the environment runs on its event loop
    env = client.environment(name)
else:  # OpenReward's client talks to a session server named by OPENREWARD_SESSION_URL
    os.environ["OPENREWARD_SESSION_URL"] = url
    from openreward import OpenReward

    env = OpenReward(api_key="local").environments.get(name)

out = {"results": []}
for answer in json.loads(Path(answers).read_text()):
    with env.session(split=split, index=int(index)) as session:
        out["prompt"] = [block.text for block in session.get_prompt()]
        out["tools"] = [tool.name for tool in session.list_tools()]
        result = session.call_tool("answer", {"answer": answer})
        out["results"].append(
            {
                "reward": result.reward,
                "finished": result.finished,
                "text": [block.text for block in result.blocks],
            }
        )
print(json.dumps(out))
