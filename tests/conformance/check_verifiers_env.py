"""Runs inside the verifiers==0.3.1 venv: verifiers' own loader imports the environment module
taskpack wrote beside its datasets, and the rubric it returns scores each task's reference
completion 1.0 and a wrong one 0.0, through an offline rollout against a stub OpenAI server.

    python check_verifiers_env.py EXPORT_DIR REFERENCES.json  ->  JSON on stdout

REFERENCES.json maps each eval prompt's last message to [reference reply, wrong reply].
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import verifiers as vf

sys.path.insert(0, sys.argv[1])
env = vf.load_environment("taskpack_env")
with open(sys.argv[2], encoding="utf-8") as f:
    references = json.load(f)
which = {"reply": 0}


class FakeOpenAI(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][-1]["content"]
        if isinstance(question, list):
            question = "".join(part.get("text", "") for part in question)
        content = references.get(question, ["?", "?"])[which["reply"]]
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
threading.Thread(target=server.serve_forever, daemon=True).start()
os.environ["FAKE_KEY"] = "not-a-secret"
config = vf.ClientConfig(
    api_base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
    api_key_var="FAKE_KEY",
    max_retries=0,
)
n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
out = {"type": type(env).__name__, "eval_rows": len(env.get_eval_dataset())}
for name, index in (("reference", 0), ("wrong", 1)):
    which["reply"] = index
    results = env.evaluate_sync(client=config, model="fake", num_examples=n)
    out[name] = [o["reward"] for o in results["outputs"]]
print(json.dumps(out))
