# serve-fn's triton_python_backend_utils: the pb_utils API of Triton's Python backend
# (https://github.com/triton-inference-server/python_backend#usage), written for serve-fn's stub
# process (pb_stub.py). Tensors arrive as numpy arrays over shared memory; every call that leaves
# the process (responses, BLS, logs, metrics) goes through the stub's channel, `_channel`.
import json
import threading

import numpy as np

TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2

# Set by pb_stub.py before the model is imported.
_channel = None

_TRITON_TO_NUMPY = {
    "TYPE_BOOL": np.bool_, "TYPE_UINT8": np.uint8, "TYPE_UINT16": np.uint16, "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64, "TYPE_INT8": np.int8, "TYPE_INT16": np.int16, "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64, "TYPE_FP16": np.float16, "TYPE_FP32": np.float32, "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_, "TYPE_BF16": np.uint16,
}


def triton_string_to_numpy(triton_type_string):
    return _TRITON_TO_NUMPY[triton_type_string]


def get_input_tensor_by_name(inference_request, name):
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config, name):
    for config in model_config.get("input", []):
        if config["name"] == name:
            return config
    return None


def get_output_config_by_name(model_config, name):
    for config in model_config.get("output", []):
        if config["name"] == name:
            return config
    return None


def using_decoupled_model_transaction_policy(model_config):
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))


def serialize_byte_tensor(input_tensor):
    """Triton's BYTES layout: each element as a 4-byte little-endian length and its bytes."""
    parts = []
    for item in input_tensor.reshape(-1):
        data = item if isinstance(item, bytes) else str(item).encode("utf-8")
        parts.append(len(data).to_bytes(4, "little"))
        parts.append(data)
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    data = memoryview(encoded_tensor).cast("B")
    out = []
    offset = 0
    while offset < len(data):
        length = int.from_bytes(data[offset:offset + 4], "little")
        offset += 4
        out.append(bytes(data[offset:offset + length]))
        offset += length
    return np.array(out, dtype=np.object_)


class TritonError:
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        self._message = message
        self._code = code

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __repr__(self):
        return "TritonError(%r, %d)" % (self._message, self._code)


class TritonModelException(Exception):
    def message(self):
        return str(self.args[0]) if self.args else ""


class Tensor:
    def __init__(self, name, array, dtype=None):
        self._name = name
        array = np.asarray(array)
        if array.dtype.kind in ("U", "S"):
            array = array.astype(np.object_)
        self._array = array

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)

    def is_cpu(self):
        return True

    def to_dlpack(self):
        return self._array.__dlpack__()

    @staticmethod
    def from_dlpack(name, capsule):
        return Tensor(name, np.from_dlpack(capsule))


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        self._outputs = list(output_tensors or [])
        self._error = error
        if isinstance(parameters, str):
            parameters = json.loads(parameters)
        self._parameters = dict(parameters or {})

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


class InferenceResponseSender:
    def __init__(self, call_id, index):
        self._call_id = call_id
        self._index = index
        self._closed = False

    def send(self, response=None, flags=0):
        if self._closed:
            raise TritonModelException("the response sender has already sent the final flag")
        final = bool(flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        self._closed = final
        _channel.send_response(self._call_id, self._index, response, final)

    def is_cancelled(self):
        return _channel.is_cancelled(self._call_id)


class InferenceRequest:
    """A request handed to execute, or built by the model to call another model (BLS)."""

    def __init__(self, model_name=None, inputs=None, requested_output_names=None, request_id="",
                 correlation_id=0, flags=0, timeout=0, model_version=-1, parameters=None,
                 _call_id=None, _index=0, **_ignored):
        # Models often take the name from a BYTES input (numpy bytes); the C++ binding accepts it too.
        self._model_name = model_name.decode("utf-8") if isinstance(model_name, bytes) else (None if model_name is None else str(model_name))
        self._inputs = list(inputs or [])
        self._requested = list(requested_output_names or [])
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._flags = flags
        self._timeout = timeout
        self._model_version = model_version
        if isinstance(parameters, str):
            parameters = json.loads(parameters)
        self._parameters = dict(parameters or {})
        self._call_id = _call_id
        self._index = _index
        self._sender = None

    def inputs(self):
        return self._inputs

    def requested_output_names(self):
        return self._requested

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def flags(self):
        return self._flags

    def timeout(self):
        return self._timeout

    def model_name(self):
        return self._model_name

    def parameters(self):
        return json.dumps(self._parameters)

    def is_cancelled(self):
        return self._call_id is not None and _channel.is_cancelled(self._call_id)

    def get_response_sender(self):
        if self._sender is None:
            self._sender = InferenceResponseSender(self._call_id, self._index)
        return self._sender

    def exec(self, decoupled=False):
        """BLS: runs the request on the served model it names and waits for its response(s)."""
        pending = _channel.start_bls(self, decoupled)
        return pending.iterate() if decoupled else pending.wait_one()

    def async_exec(self, decoupled=False):
        import asyncio
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        pending = _channel.start_bls(self, decoupled)
        def settle():
            result = list(pending.iterate()) if decoupled else pending.wait_one()
            loop.call_soon_threadsafe(future.set_result, iter(result) if decoupled else result)
        threading.Thread(target=settle, daemon=True).start()
        return future


class Logger:
    @staticmethod
    def log(message, level=None):
        _channel.log(level or "info", message)

    @staticmethod
    def log_info(message):
        _channel.log("info", message)

    @staticmethod
    def log_warn(message):
        _channel.log("warn", message)

    @staticmethod
    def log_error(message):
        _channel.log("error", message)

    @staticmethod
    def log_verbose(message):
        _channel.log("debug", message)


class LogLevel:
    INFO = "info"
    WARNING = "warn"
    ERROR = "error"
    VERBOSE = "debug"


class MetricFamily:
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"

    def __init__(self, name, description, kind):
        self._name = name
        self._kind = kind
        _channel.send({"type": "metric-family", "name": name, "description": description, "kind": kind})

    def Metric(self, labels=None, buckets=None):
        return Metric(self, labels or {}, buckets)


class Metric:
    """A value of a MetricFamily; serve-fn exports it on /metrics with prom-client."""

    def __init__(self, family, labels, buckets=None):
        self._family = family
        self._labels = {str(k): str(v) for k, v in labels.items()}
        self._value = 0.0
        _channel.send({"type": "metric", "family": family._name, "labels": self._labels, "op": "create",
                       "value": 0, **({"buckets": list(buckets)} if buckets else {})})

    def increment(self, value):
        if self._family._kind != MetricFamily.COUNTER and self._family._kind != MetricFamily.GAUGE:
            raise TritonModelException("increment() is for counters and gauges")
        if self._family._kind == MetricFamily.COUNTER and value < 0:
            raise TritonModelException("a counter only increases")
        self._value += value
        self._op("increment", value)

    def set(self, value):
        if self._family._kind != MetricFamily.GAUGE:
            raise TritonModelException("set() is for gauges")
        self._value = float(value)
        self._op("set", value)

    def observe(self, value):
        if self._family._kind != MetricFamily.HISTOGRAM:
            raise TritonModelException("observe() is for histograms")
        self._op("observe", value)

    def value(self):
        return self._value

    def _op(self, op, value):
        _channel.send({"type": "metric", "family": self._family._name, "labels": self._labels, "op": op, "value": float(value)})


class ModelConfig:
    """What auto_complete_config receives and returns: the model configuration as Triton's JSON."""

    def __init__(self, config):
        self._config = config

    def as_dict(self):
        return self._config

    def set_max_batch_size(self, max_batch_size):
        self._config["max_batch_size"] = int(max_batch_size)

    def add_input(self, input):
        self._add("input", input)

    def add_output(self, output):
        self._add("output", output)

    def _add(self, key, tensor):
        if any(t["name"] == tensor["name"] for t in self._config.setdefault(key, [])):
            raise ValueError("%s '%s' already exists in the model configuration" % (key, tensor["name"]))
        self._config[key].append(dict(tensor))

    def set_dynamic_batching(self):
        self._config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, transaction_policy_dict):
        self._config["model_transaction_policy"] = dict(transaction_policy_dict)
