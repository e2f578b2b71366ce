"""The codec: the CBOR runtime (``_cbor``), the code generated from ``schema/`` (``_generated``:
the header layout, the metadata types and their encoders and decoders), the optional compiled
skip kernel (``_cskip.c``) and the rule that loads every compiled kernel (``_kernels``).

It imports nothing of burnpack above it but the exceptions (``burnpack.errors``).
"""
