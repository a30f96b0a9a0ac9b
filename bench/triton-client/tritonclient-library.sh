# Sourced by the scripts that run Triton's own Python clients (bench/triton-client/run.sh,
# bench/python-backend/examples.sh): assembles tritonclient in $WORK as the client's build_wheel.py
# does: the library from the client checkout ($CLIENT), protoc's stubs from the common checkout's
# protos ($COMMON), renamed into tritonclient/grpc with their imports fixed. Needs $PYTHON with
# grpc_tools; puts the library on PYTHONPATH.
cp -r "$CLIENT/src/python/library/tritonclient" "$WORK/"
mkdir "$WORK/gen"
"$PYTHON" -m grpc_tools.protoc -I "$COMMON/protobuf" --python_out "$WORK/gen" --grpc_python_out "$WORK/gen" \
  "$COMMON/protobuf/grpc_service.proto" "$COMMON/protobuf/model_config.proto" || exit 1
STUBS="$WORK/tritonclient/grpc"
mv "$WORK/gen/model_config_pb2.py" "$STUBS/model_config_pb2.py"
mv "$WORK/gen/grpc_service_pb2.py" "$STUBS/service_pb2.py"
mv "$WORK/gen/grpc_service_pb2_grpc.py" "$STUBS/service_pb2_grpc.py"
sed -E -i 's/^import ([^ ]*)_pb2 as ([^ ]*)$/from tritonclient.grpc import \1_pb2 as \2/' "$STUBS/model_config_pb2.py" "$STUBS/service_pb2.py"
sed -E -i 's/^import grpc_([^ ]*)_pb2 as ([^ ]*)$/from tritonclient.grpc import \1_pb2 as \2/' "$STUBS/service_pb2_grpc.py"
export PYTHONPATH="$WORK${PYTHONPATH:+:$PYTHONPATH}"
# Older grpc-tools write stubs the C++ protobuf runtime refuses; the pure-Python one reads them.
export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
