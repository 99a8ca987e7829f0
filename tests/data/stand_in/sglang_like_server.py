"""A stand-in for `python -m sglang.launch_server` in tests: answers /health and /generate on --port over
loopback, prints SGLang's capture lines (piecewise only without --disable-piecewise-cuda-graph), and
takes a little longer per request with piecewise off, so that ratios have a direction to check.
Answers carry `output_ids` (a function of the prompt alone, so every mode generates the same) and, when
asked with return_logprob, `meta_info.output_top_logprobs` in SGLang's [logprob, id, text] form."""

import http.server
import json
import sys
import time

argv = sys.argv[1:]
port = int(argv[argv.index("--port") + 1])
piecewise = "--disable-piecewise-cuda-graph" not in argv
print("Capture cuda graph begin. This can take up to several minutes.", flush=True)
print("Capture cuda graph end. Time elapsed: 0.50 s. mem usage=0.01 GB.", flush=True)
if piecewise:
    print("Capture piecewise CUDA graph begin. avail mem=70.00 GB", flush=True)
    print("Compiling a graph for dynamic shape takes 0.10 s", flush=True)
    print("Capture piecewise CUDA graph end. Time elapsed: 0.20 s. mem usage=0.00 GB.", flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        new = body["sampling_params"]["max_new_tokens"]
        # 1 ms a new token: a decode step's signal (128 steps: 128 ms) stays far above a loaded 2-core machine's
        # scheduling jitter (0.2 ms a token measured a negative step time under CI load on 2026-12-05).
        time.sleep((0.002 if piecewise else 0.003) + 0.001 * new)
        start = sum(body.get("input_ids") or [0])
        ids = [(start + i) % 97 + 4 for i in range(new)]
        meta = {"completion_tokens": new}
        if body.get("return_logprob"):
            meta["output_top_logprobs"] = [[[-0.1, t, None], [-0.9, t + 1, None]] for t in ids]
        data = json.dumps({"text": "x" * new, "output_ids": ids, "meta_info": meta}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)


print("The server is fired up and ready to roll!", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
