"""Tests of burnpack.core: the container, its byte sources and the public modules it keeps."""
