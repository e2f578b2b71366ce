"""Tests of burnpack.codec: the schema, the generated code, the CBOR runtime and the compiled kernels."""
