"""Runs inside the ors-sdk venv: ORS's own Server, over an environment holding the task specs
`taskpack serve` gave, answers a battery of requests; the statuses and bodies come back for the
test to hold beside taskpack's answers to the same requests.

    python check_ors_server.py SPECS.json REQUESTS.json  ->  JSON on stdout

SPECS.json: {"name": ..., "splits": {split: [task_spec, ...]}}; REQUESTS.json: [[method, path,
body or null], ...] with `{env}` in a path standing for the environment's name.
"""

import json
import logging
import sys
import threading
import time
import urllib.error
import urllib.request

import uvicorn
from ors import Environment, Server, TextBlock, ToolOutput, tool
from pydantic import BaseModel

with open(sys.argv[1]) as f:
    SPECS = json.load(f)
with open(sys.argv[2]) as f:
    REQUESTS = json.load(f)


class Answer(BaseModel):
    answer: str


class Served(Environment):
    @classmethod
    def list_splits(cls):
        return list(SPECS["splits"])

    @classmethod
    def list_tasks(cls, split):
        return SPECS["splits"][split]

    @classmethod
    def name(cls):
        return SPECS["name"]

    def get_prompt(self):
        return [TextBlock(text="")]

    @tool
    def submit(self, params: Answer) -> ToolOutput:
        """Submit an answer."""
        return ToolOutput(blocks=[TextBlock(text=params.answer)], reward=0.0, finished=True)


logging.disable(logging.CRITICAL)
config = uvicorn.Config(Server([Served]).app, host="127.0.0.1", port=0, log_level="critical")
uv = uvicorn.Server(config)
threading.Thread(target=uv.run, daemon=True).start()
while not uv.started:
    time.sleep(0.05)
base = f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}"
answers = []
for method, path, body in REQUESTS:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path.format(env=SPECS["name"]), data, method=method)
    request.add_header("Content-Type", "application/json")
    request.add_header("X-Session-ID", "s")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answers.append([response.status, response.read().decode()])
    except urllib.error.HTTPError as e:
        answers.append([e.code, e.read().decode()])
uv.should_exit = True
print(json.dumps({"answers": answers}))
