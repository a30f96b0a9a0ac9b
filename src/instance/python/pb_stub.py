# serve-fn's stub process for Triton Python backend models, in the role of python_backend's
# pb_stub (https://github.com/triton-inference-server/python_backend#python-backend): it imports
# the model's model.py, runs TritonPythonModel's auto_complete_config / initialize / execute /
# finalize, and talks to serve-fn (src/engine/python-stub-instance.ts) over two pipes (fds given on
# the command line). Each message is one frame: a u32 header length, a u32 payload length (little
# endian), a JSON header and a payload of raw tensor bytes. Tensors over SHM_THRESHOLD bytes travel
# in a shared-memory file instead (header "shm": its path), mapped here as numpy arrays, so large
# tensors are never pushed through the pipe. docs/model-repository.md#python-backend describes the
# message set; src/wire/python-stub-messages.ts declares it.
import asyncio
import importlib.util
import json
import mmap
import os
import queue
import signal
import struct
import sys
import threading
import traceback

import numpy as np

import triton_python_backend_utils as pb_utils

SHM_THRESHOLD = 64 * 1024
ALIGN = 64

_NUMPY_BY_DATATYPE = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
    "FP32": np.float32, "FP64": np.float64, "BF16": np.uint16,
}
_DATATYPE_BY_NUMPY = {np.dtype(v): k for k, v in _NUMPY_BY_DATATYPE.items() if k != "BF16"}


def datatype_of(array):
    if array.dtype == np.object_ or array.dtype.kind in ("U", "S"):
        return "BYTES"
    found = _DATATYPE_BY_NUMPY.get(array.dtype)
    if found is None:
        raise pb_utils.TritonModelException("numpy dtype %s has no Triton datatype" % array.dtype)
    return found


class Channel:
    """Both pipes, the shared-memory files and what waits on serve-fn's answers (BLS, cancels)."""

    def __init__(self, fd_in, fd_out, shm_dir, shm_prefix):
        self._in = os.fdopen(fd_in, "rb", buffering=0)
        self._out = os.fdopen(fd_out, "wb", buffering=0)
        self._write_lock = threading.Lock()
        self._shm_dir = shm_dir
        self._shm_prefix = shm_prefix
        self._shm_count = 0
        self._cancelled = set()
        self._bls = {}
        self._bls_next = 1
        self._lock = threading.Lock()
        self.inbox = queue.Queue()

    # -- framing --------------------------------------------------------------------------------
    def _read_exact(self, n):
        chunks = []
        while n > 0:
            chunk = self._in.read(n)
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_frame(self):
        head = self._read_exact(8)
        if head is None:
            return None, None
        header_len, payload_len = struct.unpack("<II", head)
        header = json.loads(self._read_exact(header_len))
        payload = bytearray(self._read_exact(payload_len)) if payload_len else bytearray()
        return header, payload

    def send(self, header, payload=b""):
        data = json.dumps(header).encode("utf-8")
        with self._write_lock:
            self._out.write(struct.pack("<II", len(data), len(payload)) + data)
            if payload:
                self._out.write(payload)

    # -- tensors --------------------------------------------------------------------------------
    def source_of(self, header, payload):
        """Where a message's tensors lie: its payload, or its shared-memory file mapped copy-on-write."""
        path = header.get("shm")
        if path is None:
            return payload
        with open(path, "rb") as f:
            source = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        os.unlink(path)
        return source

    def read_tensors(self, refs, source):
        """Numpy arrays over `source` (source_of), without copies."""
        tensors = []
        for ref in refs:
            count = ref["size"]
            if ref["datatype"] == "BYTES":
                array = pb_utils.deserialize_bytes_tensor(memoryview(source)[ref["offset"]:ref["offset"] + count])
            else:
                dtype = np.dtype(_NUMPY_BY_DATATYPE[ref["datatype"]])
                array = np.frombuffer(source, dtype=dtype, count=count // dtype.itemsize, offset=ref["offset"])
            tensors.append(pb_utils.Tensor(ref["name"], array.reshape(ref["shape"])))
        return tensors

    def write_tensors(self, tensor_lists):
        """Lays out each list's tensors; returns (refs per list, extra header fields, payload)."""
        blobs = []
        refs_per_list = []
        offset = 0
        for tensors in tensor_lists:
            refs = []
            for tensor in tensors:
                array = tensor.as_numpy()
                datatype = datatype_of(array)
                raw = pb_utils.serialize_byte_tensor(array) if datatype == "BYTES" else np.ascontiguousarray(array).reshape(-1).view(np.uint8)
                refs.append({"name": tensor.name(), "datatype": datatype, "shape": list(array.shape), "offset": offset, "size": int(raw.nbytes)})
                blobs.append((offset, raw))
                offset += (raw.nbytes + ALIGN - 1) // ALIGN * ALIGN
            refs_per_list.append(refs)
        if offset <= SHM_THRESHOLD:
            payload = bytearray(offset)
            for at, raw in blobs:
                payload[at:at + raw.nbytes] = raw.tobytes()
            return refs_per_list, {}, payload
        with self._lock:
            self._shm_count += 1
            path = os.path.join(self._shm_dir, "%s-py-%d" % (self._shm_prefix, self._shm_count))
        with open(path, "w+b") as f:
            f.truncate(offset)
            with mmap.mmap(f.fileno(), offset) as region:
                view = np.frombuffer(region, dtype=np.uint8)
                for at, raw in blobs:
                    view[at:at + raw.nbytes] = raw
                del view
        return refs_per_list, {"shm": path}, b""

    # -- what the model calls -------------------------------------------------------------------
    def is_cancelled(self, call_id):
        return call_id in self._cancelled

    def log(self, level, message):
        self.send({"type": "log", "level": level, "message": str(message)})

    def send_response(self, call_id, index, response, final):
        refs, extra, payload = self.write_tensors([response.output_tensors() if response is not None else []])
        self.send({"type": "response", "id": call_id, "index": index, "final": final,
                   "response": None if response is None else response_header(response, refs[0]), **extra}, payload)

    def start_bls(self, request, decoupled):
        pending = PendingBls()
        with self._lock:
            bls_id = self._bls_next
            self._bls_next += 1
            self._bls[bls_id] = pending
        refs, extra, payload = self.write_tensors([request.inputs()])
        self.send({"type": "bls", "id": bls_id, "model": request.model_name(),
                   "version": "" if request._model_version in (-1, None) else str(request._model_version),
                   "decoupled": bool(decoupled), "inputs": refs[0], "outputs": request.requested_output_names(),
                   "parameters": json.loads(request.parameters()), "request_id": request.request_id(),
                   "timeout": request.timeout(), **extra}, payload)
        return pending

    # -- the reader thread ----------------------------------------------------------------------
    def read_forever(self):
        while True:
            header, payload = self.read_frame()
            if header is None:
                self.inbox.put(({"type": "eof"}, None))
                return
            kind = header["type"]
            if kind == "cancel":
                self._cancelled.add(header["id"])
            elif kind == "bls-response":
                with self._lock:
                    pending = self._bls.get(header["id"])
                    if header["final"]:
                        self._bls.pop(header["id"], None)
                if pending is not None:
                    pending.put(self.bls_response(header, payload), header["final"])
            else:
                self.inbox.put((header, payload))

    def bls_response(self, header, payload):
        if header.get("error") is not None:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(header["error"]["message"], header["error"].get("code", pb_utils.TritonError.INTERNAL)))
        body = header.get("response")
        if body is None:
            return None
        return pb_utils.InferenceResponse(self.read_tensors(body["outputs"], self.source_of(header, payload)), parameters=body.get("parameters"))


class PendingBls:
    def __init__(self):
        self._items = queue.Queue()

    def put(self, response, final):
        self._items.put((response, final))

    def iterate(self):
        while True:
            response, final = self._items.get()
            if response is not None:
                yield response
            elif final:
                yield pb_utils.InferenceResponse()
            if final:
                return

    def wait_one(self):
        responses = [r for r in self.iterate() if r.has_error() or r.output_tensors()]
        return responses[0] if responses else pb_utils.InferenceResponse()


def response_header(response, refs):
    error = response.error()
    if error is not None:
        return {"error": {"message": error.message(), "code": error.code()}}
    return {"outputs": refs, "parameters": json.loads(response.parameters())}


def error_header(exc):
    return {"message": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip(), "code": pb_utils.TritonError.INTERNAL}


def load_model_class(model_file):
    sys.path.insert(0, os.path.dirname(model_file))
    spec = importlib.util.spec_from_file_location("model", model_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model"] = module
    spec.loader.exec_module(module)
    return module.TritonPythonModel


class Stub:
    def __init__(self, channel):
        self.channel = channel
        self.model = None
        self.decoupled = False
        self.loop = asyncio.new_event_loop()

    def run(self):
        threading.Thread(target=self.channel.read_forever, daemon=True).start()
        while True:
            header, payload = self.channel.inbox.get()
            kind = header["type"]
            if kind == "init":
                self.initialize(header)
            elif kind == "auto-complete":
                self.auto_complete(header)
                return
            elif kind == "execute":
                self.execute(header, payload)
            elif kind in ("finalize", "eof"):
                self.finalize(kind == "finalize")
                return

    def auto_complete(self, header):
        try:
            model_class = load_model_class(header["file"])
            config = pb_utils.ModelConfig(header["config"])
            if hasattr(model_class, "auto_complete_config"):
                config = model_class.auto_complete_config(config)
            self.channel.send({"type": "auto-completed", "config": config.as_dict()})
        except BaseException as exc:
            self.channel.send({"type": "init-failed", "error": error_header(exc)})

    def initialize(self, header):
        try:
            args = header["args"]
            self.decoupled = pb_utils.using_decoupled_model_transaction_policy(json.loads(args["model_config"]))
            self.model = load_model_class(header["file"])()
            if hasattr(self.model, "initialize"):
                done = self.model.initialize(args)
                if asyncio.iscoroutine(done):
                    self.loop.run_until_complete(done)
            self.channel.send({"type": "ready"})
        except BaseException as exc:
            self.channel.send({"type": "init-failed", "error": error_header(exc)})
            raise SystemExit(1)

    def execute(self, header, payload):
        call_id = header["id"]
        try:
            requests = []
            source = self.channel.source_of(header, payload)
            for index, wire in enumerate(header["requests"]):
                inputs = self.channel.read_tensors(wire["inputs"], source)
                requests.append(pb_utils.InferenceRequest(
                    inputs=inputs, requested_output_names=wire["outputs"], request_id=wire.get("id", ""),
                    correlation_id=wire.get("correlation_id", 0), flags=wire.get("flags", 0),
                    parameters=wire.get("parameters") or {}, model_name=header.get("model"), _call_id=call_id, _index=index))
            responses = self.model.execute(requests)
            if asyncio.iscoroutine(responses):
                responses = self.loop.run_until_complete(responses)
        except BaseException as exc:
            self.channel.send({"type": "failed", "id": call_id, "error": error_header(exc)})
            return
        if self.decoupled:
            self.channel.send({"type": "executed", "id": call_id})
            return
        if not isinstance(responses, (list, tuple)) or len(responses) != len(requests):
            self.channel.send({"type": "failed", "id": call_id, "error": {"message": "execute returned %s for %d requests; it must return one InferenceResponse per request" % (type(responses).__name__ if not isinstance(responses, (list, tuple)) else "%d responses" % len(responses), len(requests)), "code": pb_utils.TritonError.INTERNAL}})
            return
        try:
            refs, extra, out_payload = self.channel.write_tensors([r.output_tensors() for r in responses])
            self.channel.send({"type": "responses", "id": call_id, "responses": [response_header(r, refs[i]) for i, r in enumerate(responses)], **extra}, out_payload)
        except BaseException as exc:
            self.channel.send({"type": "failed", "id": call_id, "error": error_header(exc)})

    def finalize(self, answer):
        error = None
        try:
            if self.model is not None and hasattr(self.model, "finalize"):
                self.model.finalize()
        except BaseException as exc:
            error = error_header(exc)
        if answer:
            self.channel.send({"type": "finalized", **({"error": error} if error else {})})


def main():
    # serve-fn decides when the stub ends (a finalize message, or its pipe closing): a Ctrl-C or a
    # SIGTERM sent to the whole process group must not kill it before finalize has run.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fd_in, fd_out, shm_dir, shm_prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    channel = Channel(fd_in, fd_out, shm_dir, shm_prefix)
    pb_utils._channel = channel
    Stub(channel).run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
