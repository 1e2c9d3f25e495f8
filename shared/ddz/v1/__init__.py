"""Generated protobuf and gRPC stubs of package ddz.v1 (tools/gen_protos.py)."""
