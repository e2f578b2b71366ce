"""Packs at URLs and in object stores (``https://``, ``s3://``, ``gs://``, ``hf://``, …) through
fsspec, an optional extra: ``pip install 'burnpack[remote]'``.

The public path of ``burnpack.core.remote``, where the container layer keeps it."""

from .core.remote import *  # noqa: F403
from .core.remote import __all__ as __all__
