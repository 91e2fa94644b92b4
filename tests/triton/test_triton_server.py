#!/usr/bin/env python3
"""The minirt Triton backend against a real Triton Inference Server.

Starts the tritonserver of the nvidia-pytriton wheel on 127.0.0.1 (free
ports) with a temporary model repository served by
BUILD/triton-backends/minirt/libtriton_minirt.so, and checks every answer
against onnxruntime on the same input (rtol 1e-4, atol 1e-5, as the model
tests): HTTP and gRPC on generated and real models with auto-completed and
explicit configurations, dynamic batching under concurrent load, two
instances of one model, bad requests, a damaged model, load/unload cycles
without a leak, and a clean shutdown.

    test_triton_server.py --build BUILD --models BUILD/models [--shared ../shared/models]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import numpy as np
import onnxruntime as ort
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

RTOL, ATOL = 1e-4, 1e-5
ARGS = None


def tritonserver_binary():
    import pytriton

    return os.path.join(os.path.dirname(pytriton.__file__), "tritonserver", "bin", "tritonserver")


def free_ports(n):
    """n distinct free ports: the sockets stay bound until all are chosen (the
    kernel may hand the same ephemeral port to two binds in a row)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def reference(model_path, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def assert_close(test, got, want, what):
    test.assertEqual(got.shape, want.shape, what)
    if want.size == 0:
        return
    test.assertTrue(np.allclose(got, want, rtol=RTOL, atol=ATOL),
                    f"{what}: max abs diff {np.max(np.abs(got - want)):.3g}")


class Server:
    """One tritonserver process with its log in a file."""

    def __init__(self, repo, backend_dir, log_path, extra=()):
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.log_path = log_path
        cmd = [tritonserver_binary(), f"--model-repository={repo}", f"--backend-directory={backend_dir}",
               "--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1",
               f"--http-port={self.http_port}", f"--grpc-port={self.grpc_port}",
               f"--metrics-port={self.metrics_port}", "--model-control-mode=explicit",
               "--exit-timeout-secs=30", *extra]
        self.log = open(log_path, "w")
        # Each model load starts threads (Triton's and minirt's), and glibc
        # gives new threads new malloc arenas until it has 8 per core: RSS
        # that climbs over the first reloads and then stays, not a leak. A
        # server that reloads often caps them, as this one does, so that the
        # reload test sees what the backend keeps.
        env = dict(os.environ, MALLOC_ARENA_MAX=os.environ.get("MALLOC_ARENA_MAX", "2"))
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.http = f"127.0.0.1:{self.http_port}"
        self.grpc = f"127.0.0.1:{self.grpc_port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(f"http://{self.http}/v2/health/live", timeout=1) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError("tritonserver did not become live within 60 s:\n" + self.log_text())

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        self.log.close()
        return self.proc.returncode


def write_model(repo, name, onnx_path, config=None, filename="model.onnx"):
    os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
    shutil.copy(onnx_path, os.path.join(repo, name, "1", filename))
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(config if config is not None else 'backend: "minirt"\n')


class TritonBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="minirt-triton-")
        repo = cls.repo = os.path.join(cls.tmp, "repo")
        m = ARGS.models
        cls.onnx = {"resnet18": os.path.join(m, "resnet18.onnx"), "mnist_cnn": os.path.join(m, "mnist_cnn.onnx")}
        # Auto-completed configurations: only the backend is named.
        write_model(repo, "resnet18", cls.onnx["resnet18"])
        write_model(repo, "mnist_cnn", cls.onnx["mnist_cnn"])
        # An explicit configuration: two CPU instances, one thread each,
        # batching without a dynamic batcher, another file name.
        write_model(repo, "resnet18_explicit", cls.onnx["resnet18"], filename="resnet.onnx", config="""
name: "resnet18_explicit"
backend: "minirt"
max_batch_size: 8
default_model_filename: "resnet.onnx"
input [ { name: "input", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] } ]
output [ { name: "logits", data_type: TYPE_FP32, dims: [ 1000 ] } ]
instance_group [ { count: 2, kind: KIND_CPU } ]
parameters { key: "threads" value { string_value: "1" } }
parameters { key: "tuning" value { string_value: "heuristic" } }
""")
        cls.onnx["resnet18_explicit"] = cls.onnx["resnet18"]
        # The CPU's bf16 math (MathMode::kBf16) from the model's configuration.
        write_model(repo, "resnet18_bf16", cls.onnx["resnet18"], config="""
backend: "minirt"
max_batch_size: 4
parameters { key: "threads" value { string_value: "1" } }
parameters { key: "tuning" value { string_value: "heuristic" } }
parameters { key: "math" value { string_value: "bf16" } }
""")
        cls.onnx["resnet18_bf16"] = cls.onnx["resnet18"]
        # float16 inputs, weights and outputs (TYPE_FP16), auto-completed.
        cls.onnx["mnist_fp16"] = os.path.join(m, "mnist_cnn_fp16.onnx")
        write_model(repo, "mnist_fp16", cls.onnx["mnist_fp16"])
        # NonMaxSuppression between two plan stages, auto-completed: its
        # output's rows are boxes kept, so no batching.
        cls.onnx["nms_tail"] = os.path.join(m, "nms_tail.onnx")
        write_model(repo, "nms_tail", cls.onnx["nms_tail"])
        cls.shared = {}
        if ARGS.shared and os.path.isdir(ARGS.shared):
            for name, file in [("mnist8", "mnist-8.onnx"), ("ultraface", "ultraface-slim-320.onnx"),
                               ("ppocr", "ppocr-mobile-v2-cls.onnx")]:
                path = os.path.join(ARGS.shared, file)
                if os.path.exists(path):
                    write_model(repo, name, path)
                    cls.onnx[name] = path
                    cls.shared[name] = path
        # A damaged file: minirt's sentence must reach the model's status.
        with open(cls.onnx["mnist_cnn"], "rb") as f:
            data = f.read()
        os.makedirs(os.path.join(repo, "damaged", "1"))
        with open(os.path.join(repo, "damaged", "1", "model.onnx"), "wb") as f:
            f.write(data[: len(data) // 3])
        with open(os.path.join(repo, "damaged", "config.pbtxt"), "w") as f:
            f.write('backend: "minirt"\n')
        # A configuration that contradicts its model.
        write_model(repo, "wrong_dims", cls.onnx["resnet18"], config="""
backend: "minirt"
max_batch_size: 4
input [ { name: "input", data_type: TYPE_FP32, dims: [ 3, 224, 225 ] } ]
output [ { name: "logits", data_type: TYPE_FP32, dims: [ 1000 ] } ]
""")
        cls.server = Server(repo, os.path.join(ARGS.build, "triton-backends"), os.path.join(cls.tmp, "server.log"),
                            extra=["--backend-config=minirt,default-max-batch-size=8"])
        cls.client = httpclient.InferenceServerClient(cls.server.http, concurrency=16, network_timeout=120)
        cls.gclient = grpcclient.InferenceServerClient(cls.server.grpc)
        for name in ["resnet18", "mnist_cnn", "resnet18_explicit", "resnet18_bf16", "mnist_fp16", "nms_tail",
                     *cls.shared]:
            cls.client.load_model(name)
        cls.rng = np.random.default_rng(7)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "server", None) and cls.server.proc.poll() is None:
            cls.server.stop()
        if os.environ.get("MINIRT_KEEP_TRITON_TMP"):
            print(f"kept {cls.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- helpers --------------------------------------------------------

    def infer_http(self, model, feeds, outputs=None, client=None):
        client = client or self.client
        inputs = []
        for name, arr in feeds.items():
            i = httpclient.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
            i.set_data_from_numpy(arr, binary_data=True)
            inputs.append(i)
        outs = [httpclient.InferRequestedOutput(n, binary_data=True) for n in outputs] if outputs else None
        r = client.infer(model, inputs, outputs=outs)
        return r

    def infer_grpc(self, model, feeds):
        inputs = []
        for name, arr in feeds.items():
            i = grpcclient.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
            i.set_data_from_numpy(arr)
            inputs.append(i)
        return self.gclient.infer(model, inputs)

    def check_model(self, name, feeds):
        want = reference(self.onnx[name], feeds)
        rh = self.infer_http(name, feeds)
        rg = self.infer_grpc(name, feeds)
        for out, w in want.items():
            assert_close(self, rh.as_numpy(out), w, f"{name} {out} over HTTP")
            assert_close(self, rg.as_numpy(out), w, f"{name} {out} over gRPC")

    def input_like(self, shape):
        return self.rng.standard_normal(shape).astype(np.float32)

    def expect_error(self, fn, *needles):
        with self.assertRaises(InferenceServerException) as cm:
            fn()
        msg = str(cm.exception)
        for n in needles:
            self.assertIn(n, msg)
        return msg

    def good_request_still_works(self):
        x = self.input_like((1, 3, 224, 224))
        want = reference(self.onnx["resnet18"], {"input": x})["logits"]
        assert_close(self, self.infer_http("resnet18", {"input": x}).as_numpy("logits"), want, "resnet18 after a bad request")

    # ---- tests ----------------------------------------------------------

    def test_01_autocompleted_configs(self):
        cfg = self.client.get_model_config("resnet18")
        self.assertEqual(cfg["max_batch_size"], 8)  # --backend-config=minirt,default-max-batch-size=8
        self.assertEqual(cfg["input"][0]["name"], "input")
        self.assertEqual([int(d) for d in cfg["input"][0]["dims"]], [3, 224, 224])
        self.assertEqual(cfg["output"][0]["data_type"], "TYPE_FP32")
        self.assertIn("dynamic_batching", cfg)
        fixed = self.client.get_model_config("mnist_cnn")  # batch fixed at 1 in the file
        self.assertEqual(fixed.get("max_batch_size", 0), 0)
        self.assertEqual([int(d) for d in fixed["input"][0]["dims"]], [1, 1, 28, 28])
        log = self.server.log_text()
        self.assertIn("minirt: model 'resnet18' instance 'resnet18_0' (KIND_CPU): running on the CPU", log)
        self.assertIn("(configuration auto-completed)", log)
        # Planned at load: the first request does not pay for it.
        self.assertIn("minirt: model 'resnet18' instance 'resnet18_0': warm-up run (input 1x3x224x224) planned and ran in", log)

    def test_02_generated_models_http_and_grpc(self):
        self.check_model("resnet18", {"input": self.input_like((1, 3, 224, 224))})
        self.check_model("resnet18", {"input": self.input_like((3, 3, 224, 224))})  # a batch of 3 in one request
        self.check_model("mnist_cnn", {"input": self.input_like((1, 1, 28, 28))})
        self.check_model("resnet18_explicit", {"input": self.input_like((2, 3, 224, 224))})

    def test_03_shared_models_http_and_grpc(self):
        if not self.shared:
            self.skipTest(f"{ARGS.shared} is absent: the real models are not served")
        if "mnist8" in self.shared:
            self.check_model("mnist8", {"Input3": self.input_like((1, 1, 28, 28))})
        if "ultraface" in self.shared:
            self.check_model("ultraface", {"input": self.input_like((1, 3, 240, 320))})
        if "ppocr" in self.shared:
            self.check_model("ppocr", {"x": self.input_like((2, 3, 48, 192))})
            self.check_model("ppocr", {"x": self.input_like((1, 3, 48, 96))})  # other spatial dims: a new plan

    def test_04_dynamic_batching_under_load(self):
        xs = [self.input_like((1, 3, 224, 224)) for _ in range(16)]
        want = [reference(self.onnx["resnet18"], {"input": x})["logits"] for x in xs]
        before = self.stats("resnet18")
        errors = []

        def client_thread(t):
            c = httpclient.InferenceServerClient(self.server.http, network_timeout=120)
            for i in range(50):
                k = (t * 7 + i) % len(xs)
                try:
                    got = self.infer_http("resnet18", {"input": xs[k]}, client=c).as_numpy("logits")
                    if not np.allclose(got, want[k], rtol=RTOL, atol=ATOL):
                        errors.append(f"thread {t} request {i}: wrong answer (max diff {np.max(np.abs(got - want[k])):.3g})")
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    errors.append(f"thread {t} request {i}: {e}")
            c.close()

        threads = [threading.Thread(target=client_thread, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        after = self.stats("resnet18")
        self.assertEqual(after["inference_count"] - before["inference_count"], 400)
        executions = after["execution_count"] - before["execution_count"]
        self.assertLess(executions, 400, "no request was batched with another")
        sizes = {int(b["batch_size"]) for b in after["batch_stats"]}
        self.assertTrue(any(s > 1 for s in sizes), f"batch sizes seen: {sorted(sizes)}")
        print(f"dynamic batching: 400 requests in {executions} executions, batch sizes {sorted(sizes)}", file=sys.stderr)

    def test_05_two_instances_concurrently(self):
        xs = [self.input_like((1, 3, 224, 224)) for _ in range(4)]
        want = [reference(self.onnx["resnet18"], {"input": x})["logits"] for x in xs]
        errors = []

        def client_thread(t):
            c = httpclient.InferenceServerClient(self.server.http, network_timeout=120)
            for i in range(6):
                got = self.infer_http("resnet18_explicit", {"input": xs[t]}, client=c).as_numpy("logits")
                if not np.allclose(got, want[t], rtol=RTOL, atol=ATOL):
                    errors.append(f"thread {t} request {i}: wrong answer")
            c.close()

        threads = [threading.Thread(target=client_thread, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        log = self.server.log_text()
        self.assertIn("instance 'resnet18_explicit_0_0'", log)
        self.assertIn("instance 'resnet18_explicit_0_1'", log)
        self.assertIn("1 threads", log)

    def test_06_bad_requests_get_errors_and_the_server_goes_on(self):
        # Wrong shape.
        self.expect_error(lambda: self.infer_http("resnet18", {"input": self.input_like((1, 3, 224, 200))}), "input")
        self.good_request_still_works()
        # Wrong data type.
        x64 = self.rng.standard_normal((1, 3, 224, 224))
        self.expect_error(lambda: self.infer_http("resnet18", {"input": x64}), "FP64")
        self.good_request_still_works()
        # A missing input.
        self.expect_error(lambda: self.client.infer("resnet18", []), "input")
        self.good_request_still_works()
        # A batch larger than max_batch_size.
        self.expect_error(lambda: self.infer_http("resnet18", {"input": self.input_like((9, 3, 224, 224))}), "batch")
        self.good_request_still_works()
        # A binary tensor shorter than its shape says.
        header = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 224, 224], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 1000}}]}).encode()
        req = urllib.request.Request(f"http://{self.server.http}/v2/models/resnet18/infer", data=header + b"\0" * 1000,
                                     headers={"Inference-Header-Content-Length": str(len(header)),
                                              "Content-Type": "application/octet-stream"})
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(req, timeout=30)
        body = cm.exception.read().decode()
        self.assertEqual(cm.exception.code, 400, body)
        self.assertIn("input", body)
        self.good_request_still_works()
        # An unknown model.
        self.expect_error(lambda: self.infer_http("no_such_model", {"input": self.input_like((1, 3, 224, 224))}))
        self.good_request_still_works()

    def test_07_damaged_model_and_wrong_config_fail_alone(self):
        msg = self.expect_error(lambda: self.client.load_model("damaged"), "minirt could not load it", "model.onnx")
        print(f"damaged model: {msg}", file=sys.stderr)
        msg = self.expect_error(lambda: self.client.load_model("wrong_dims"),
                                "model 'wrong_dims', input 'input': 'dims' [3,224,225] differ from the model's [3,224,224]")
        index = {m["name"]: m for m in self.client.get_model_repository_index()}
        self.assertEqual(index["damaged"]["state"], "UNAVAILABLE")
        self.assertIn("minirt could not load it", index["damaged"]["reason"])
        for name in ["resnet18", "mnist_cnn", "resnet18_explicit"]:
            self.assertTrue(self.client.is_model_ready(name), name)
        self.good_request_still_works()

    def test_08_reloads_do_not_leak(self):
        # A server of its own with this one model: in the shared server the
        # other models go on tuning in the background (resnet18 has a plan per
        # batch size test_04 made), and each tuned plan they build moves RSS
        # by megabytes at times no reload decides.
        repo = os.path.join(self.tmp, "reload-repo")
        write_model(repo, "mnist_cnn", self.onnx["mnist_cnn"])
        server = Server(repo, os.path.join(ARGS.build, "triton-backends"), os.path.join(self.tmp, "reload.log"))
        try:
            client = httpclient.InferenceServerClient(server.http, network_timeout=120)
            self.reload_and_measure(server, client)
        finally:
            server.stop()

    def reload_and_measure(self, server, client):
        x = self.input_like((1, 1, 28, 28))
        want = reference(self.onnx["mnist_cnn"], {"input": x})["logits"]
        rss = []
        for i in range(21):
            if i > 0:
                client.unload_model("mnist_cnn")
                deadline = time.time() + 30
                while client.is_model_ready("mnist_cnn") and time.time() < deadline:
                    time.sleep(0.05)
            client.load_model("mnist_cnn")
            got = self.infer_http("mnist_cnn", {"input": x}, client=client).as_numpy("logits")
            assert_close(self, got, want, f"reload {i}")
            rss.append(server.rss_kib())
        growth = rss[-1] - rss[0]
        print(f"RSS after the first load {rss[0] / 1024:.1f} MiB, after 20 reloads {rss[-1] / 1024:.1f} MiB: {rss}", file=sys.stderr)
        # Alone, the server's RSS is tens of MiB and moves by hundreds of KiB:
        # a model's weights or plan kept per reload shows.
        self.assertLess(growth, 4 * 1024, f"RSS grew by {growth / 1024:.1f} MiB over 20 reloads: {rss}")

    def test_09_statistics_and_metrics_count_minirt_work(self):
        s = self.stats("mnist_cnn")
        self.assertGreater(s["inference_count"], 0)
        self.assertGreater(int(s["inference_stats"]["compute_infer"]["ns"]), 0)
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server.metrics_port}/metrics", timeout=10) as r:
            metrics = r.read().decode()
        lines = [line for line in metrics.splitlines()
                 if line.startswith("nv_inference_request_success") and 'model="resnet18"' in line]
        self.assertTrue(lines, "no nv_inference_request_success line for resnet18")
        self.assertGreaterEqual(float(lines[0].split()[-1]), 400)

    def test_10_float16_model(self):
        # TYPE_FP16 in and out: minirt converts the weights once and computes
        # in float32; onnxruntime computes in float16. Tolerance as for the
        # float16 model tests (tests/run_f16_model_tests.sh, runtime/ops/README.md).
        cfg = self.client.get_model_config("mnist_fp16")
        self.assertEqual(cfg["input"][0]["data_type"], "TYPE_FP16")
        self.assertEqual(cfg["output"][0]["data_type"], "TYPE_FP16")
        x = self.input_like((1, 1, 28, 28)).astype(np.float16)
        want = reference(self.onnx["mnist_fp16"], {"input": x})
        for r, how in ((self.infer_http("mnist_fp16", {"input": x}), "HTTP"),
                       (self.infer_grpc("mnist_fp16", {"input": x}), "gRPC")):
            for out, w in want.items():
                got = r.as_numpy(out)
                self.assertEqual(got.dtype, np.float16, f"mnist_fp16 {out} over {how}")
                self.assertEqual(got.shape, w.shape)
                self.assertTrue(np.allclose(got.astype(np.float32), w.astype(np.float32), rtol=5e-3, atol=5e-3),
                                f"mnist_fp16 {out} over {how}: max abs diff "
                                f"{np.max(np.abs(got.astype(np.float32) - w.astype(np.float32))):.3g}")
        # A float32 tensor for a TYPE_FP16 input is refused, and the server goes on.
        self.expect_error(lambda: self.infer_http("mnist_fp16", {"input": x.astype(np.float32)}), "input")
        self.good_request_still_works()

    def test_12_bf16_math(self):
        # "math": "bf16" runs the CPU's convolutions in bfloat16 where the CPU
        # has AMX or AVX512_BF16, and says which in the instance's log line;
        # elsewhere float32, saying why. Against onnxruntime's float32: the
        # bf16 model tests' bar (scaled error 1e-2) and the same top-1.
        line = next((l for l in self.server.log_text().splitlines()
                     if "model 'resnet18_bf16' instance" in l and "cpu math:" in l), "")
        self.assertTrue("cpu math: bf16 convolutions on" in line or "cpu math: fp32 (MathMode::kBf16 asked)" in line,
                        f"the bf16 instance's log line: {line!r}")
        x = self.input_like((2, 3, 224, 224))
        want = reference(self.onnx["resnet18_bf16"], {"input": x})["logits"]
        for r, how in ((self.infer_http("resnet18_bf16", {"input": x}), "HTTP"),
                       (self.infer_grpc("resnet18_bf16", {"input": x}), "gRPC")):
            got = r.as_numpy("logits")
            self.assertEqual(got.shape, want.shape)
            err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            self.assertLessEqual(err, 1e-2, f"resnet18_bf16 over {how}: scaled error {err:.3g}")
            self.assertTrue(np.array_equal(np.argmax(got, axis=1), np.argmax(want, axis=1)),
                            f"resnet18_bf16 over {how}: top-1 changed")

    def test_11_value_sized_outputs(self):
        # NonMaxSuppression's rows depend on the data: each request gets its
        # own count (none kept included), equal to onnxruntime's, and the
        # configuration turned batching off (the output's first dimension is
        # num_selected, not the inputs' N).
        cfg = self.client.get_model_config("nms_tail")
        self.assertEqual(cfg.get("max_batch_size", 0), 0)
        self.assertEqual([[int(d) for d in o["dims"]] for o in cfg["output"]], [[-1, 3], [-1, 4]])
        rng = np.random.default_rng(11)
        counts = set()
        # The last request's logits are all below -1: sigmoid < 0.4, none kept.
        for n, scale, offset in ((1, 3.0, 0.0), (2, 3.0, 0.0), (1, -1.0, -1.0)):
            xy = rng.uniform(0, 6, size=(n, 8, 2))
            wh = rng.uniform(1, 3, size=(n, 8, 2))
            boxes = np.concatenate([xy, wh], axis=2).astype(np.float32)
            logits = (scale * np.abs(rng.standard_normal((n, 8, 3))) + offset).astype(np.float32)
            want = reference(self.onnx["nms_tail"], {"boxes": boxes, "logits": logits})
            for r, how in ((self.infer_http("nms_tail", {"boxes": boxes, "logits": logits}), "HTTP"),
                           (self.infer_grpc("nms_tail", {"boxes": boxes, "logits": logits}), "gRPC")):
                got = r.as_numpy("selected")
                self.assertTrue(np.array_equal(got, want["selected"]),
                                f"nms_tail selected over {how}: {got.tolist()} vs {want['selected'].tolist()}")
                assert_close(self, r.as_numpy("picked"), want["picked"], f"nms_tail picked over {how}")
            counts.add(want["selected"].shape[0])
        self.assertIn(0, counts)
        self.assertGreater(len(counts), 2, f"the requests kept {sorted(counts)} boxes: too alike to test sizes")

    def test_99_clean_shutdown(self):
        # Open keep-alive connections would hold the server until its exit timeout.
        self.client.close()
        self.gclient.close()
        t0 = time.time()
        rc = self.server.stop(timeout=60)
        took = time.time() - t0
        self.assertEqual(rc, 0, "tritonserver did not exit 0:\n" + self.server.log_text()[-3000:])
        self.assertLess(took, 30, "the server waited out its exit timeout")
        print(f"shutdown in {took:.1f} s", file=sys.stderr)

    def stats(self, model):
        s = self.client.get_inference_statistics(model)["model_stats"]
        return next(x for x in s if x["name"] == model)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True, help="the build folder (holds triton-backends/minirt)")
    p.add_argument("--models", required=True, help="folder of minirt-make-models' output")
    p.add_argument("--shared", default="", help="../shared/models, when present")
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
