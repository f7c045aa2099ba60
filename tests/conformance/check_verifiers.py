"""Runs inside the verifiers==0.3.1 venv: SingleTurnEnv accepts taskpack's datasets, returns
every row, and one offline rollout answered with the reference answer scores 1.0.

    python check_verifiers.py TRAIN_DIR TEST_DIR  ->  JSON on stdout
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import verifiers as vf
from datasets import load_from_disk

train, test = load_from_disk(sys.argv[1]), load_from_disk(sys.argv[2])
answers = {row["prompt"][-1]["content"]: row["answer"] for row in test}


class FakeOpenAI(BaseHTTPRequestHandler):
    """A chat-completions endpoint on 127.0.0.1 that answers with the reference answer."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][-1]["content"]
        if isinstance(question, list):
            question = "".join(part.get("text", "") for part in question)
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": answers.get(question, "?")},
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


def exact_answer(completion, answer, **kwargs) -> float:
    text = completion[-1]["content"] if isinstance(completion, list) else completion
    text = getattr(text, "content", text)
    return 1.0 if str(text).strip() == str(answer).strip() else 0.0


server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
threading.Thread(target=server.serve_forever, daemon=True).start()
env = vf.SingleTurnEnv(dataset=train, eval_dataset=test, rubric=vf.Rubric(funcs=[exact_answer]))
os.environ["FAKE_KEY"] = "not-a-secret"
config = vf.ClientConfig(
    api_base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
    api_key_var="FAKE_KEY",
    max_retries=0,
)
results = env.evaluate_sync(client=config, model="fake", num_examples=3)
rewards = [o["reward"] for o in results["outputs"]]
print(
    json.dumps(
        {
            "train_rows": len(env.get_dataset()),
            "eval_rows": len(env.get_eval_dataset()),
            "rewards": rewards,
        }
    )
)
