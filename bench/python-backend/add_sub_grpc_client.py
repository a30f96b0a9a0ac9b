# add_sub over gRPC with tritonclient.grpc: python_backend's add_sub client.py speaks HTTP only, so
# this one (written for serve-fn, same checks) covers gRPC for examples.sh.
import sys

import numpy as np
import tritonclient.grpc as grpcclient

with grpcclient.InferenceServerClient("localhost:8001") as client:
    a = np.random.rand(4).astype(np.float32)
    b = np.random.rand(4).astype(np.float32)
    inputs = [grpcclient.InferInput("INPUT0", [4], "FP32"), grpcclient.InferInput("INPUT1", [4], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"), grpcclient.InferRequestedOutput("OUTPUT1")]
    response = client.infer("add_sub", inputs, outputs=outputs)
    if not np.allclose(response.as_numpy("OUTPUT0"), a + b) or not np.allclose(response.as_numpy("OUTPUT1"), a - b):
        print("add_sub over gRPC: wrong answer")
        sys.exit(1)
print("PASS: add_sub over gRPC")
