"""Triton's own Python clients (tritonclient.http and tritonclient.grpc, unchanged) on serve-fn's text
models: texts go in as a BYTES tensor, embeddings and rerank scores come out as FP32, as
docs/text-models.md ("KServe v2 and Triton clients") describes. Run by run.sh with TEXT=1.

    text_model_client.py <http host:port> <grpc host:port> <embedder name> <reranker name>
"""
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

http_url, grpc_url, embedder, reranker = sys.argv[1:5]
TEXTS = ["what is deep learning?", "深度学习模型的推理服务", "paris"]


def texts_input(module, name, texts):
    tensor = module.InferInput(name, [len(texts)], "BYTES")
    tensor.set_data_from_numpy(np.array([t.encode("utf-8") for t in texts], dtype=np.object_))
    return tensor


def check(module, client, label):
    meta = client.get_model_metadata(embedder)
    inputs = meta["inputs"] if isinstance(meta, dict) else [{"name": i.name, "datatype": i.datatype} for i in meta.inputs]
    assert inputs[0]["name"] == "text" and inputs[0]["datatype"] == "BYTES", inputs
    result = client.infer(embedder, [texts_input(module, "text", TEXTS)], outputs=[module.InferRequestedOutput("embedding")])
    embedding = result.as_numpy("embedding")
    assert embedding.shape[0] == len(TEXTS), embedding.shape
    norms = np.linalg.norm(embedding, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5), norms
    ranked = client.infer(reranker, [texts_input(module, "query", ["capital of france"]), texts_input(module, "text", TEXTS)])
    scores = ranked.as_numpy("score")
    assert scores.shape == (len(TEXTS),) and ((scores > 0) & (scores < 1)).all(), scores
    print(f"PASS {label}: embedding {embedding.shape}, scores {np.round(scores, 4).tolist()}")
    return embedding


over_http = check(httpclient, httpclient.InferenceServerClient(http_url), "tritonclient.http")
over_grpc = check(grpcclient, grpcclient.InferenceServerClient(grpc_url), "tritonclient.grpc")
assert np.allclose(over_http, over_grpc, atol=1e-6), "HTTP and gRPC answers differ"
print("PASS the same embeddings over HTTP and gRPC")
