"""Runs inside the ors-sdk venv: an ORS Environment over taskpack's OpenReward folders, served
in-process by ors' own Server on 127.0.0.1, lists the splits and tasks and returns each
task's prompt over HTTP.

    python check_ors.py EXPORT_DIR  ->  JSON on stdout
"""

import json
import logging
import sys
import threading
import time
import urllib.request
from pathlib import Path

import uvicorn
import yaml
from ors import Environment, Server, TextBlock, ToolOutput, tool
from pydantic import BaseModel

ROOT = Path(sys.argv[1])


class Answer(BaseModel):
    answer: str


class TaskFolders(Environment):
    """Reads only what the SETA layout defines: the split index and each task.yaml."""

    @classmethod
    def list_splits(cls):
        return sorted(p.name for p in ROOT.iterdir() if (p / "index.json").is_file())

    @classmethod
    def list_tasks(cls, split):
        index = json.loads((ROOT / split / "index.json").read_text())
        return [{"split": split, "folder": entry["folder"]} for entry in index["tasks"]]

    def get_prompt(self):
        folder = ROOT / self.task_spec["split"] / self.task_spec["folder"]
        config = yaml.safe_load((folder / "task.yaml").read_text())
        return [TextBlock(text=config["instruction"])]

    @tool
    def submit(self, params: Answer) -> ToolOutput:
        """Submit an answer."""
        return ToolOutput(blocks=[TextBlock(text=params.answer)], reward=0.0, finished=True)


def call(method, path, body=None, sid=None):
    request = urllib.request.Request(
        f"{base}{path}", method=method, data=None if body is None else json.dumps(body).encode()
    )
    request.add_header("Content-Type", "application/json")
    if sid:
        request.add_header("X-Session-ID", sid)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


server = Server([TaskFolders])
logging.disable(logging.INFO)
config = uvicorn.Config(server.app, host="127.0.0.1", port=0, log_level="warning")
uv = uvicorn.Server(config)
thread = threading.Thread(target=uv.run, daemon=True)
thread.start()
while not uv.started:
    time.sleep(0.05)
port = uv.servers[0].sockets[0].getsockname()[1]
base = f"http://127.0.0.1:{port}"
env = "taskfolders"
splits = [s["name"] if isinstance(s, dict) else s for s in call("GET", f"/{env}/splits")]
result = {"splits": splits, "tasks": {}, "prompts": {}}
for split in splits:
    tasks = call("POST", f"/{env}/tasks", {"split": split})["tasks"]
    result["tasks"][split] = len(tasks)
    prompts = []
    for index in range(len(tasks)):
        sid = f"s-{split}-{index}"
        call("POST", "/create", {"env_name": env, "split": split, "index": index}, sid=sid)
        blocks = call("GET", f"/{env}/prompt", sid=sid)
        prompts.append(blocks[0]["text"])
        call("POST", "/delete", {}, sid=sid)
    result["prompts"][split] = prompts
uv.should_exit = True
print(json.dumps(result))
