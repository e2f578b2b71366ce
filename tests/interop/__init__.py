"""Tests of the interop layer (PyTorch, safetensors, npz, conversions)."""
