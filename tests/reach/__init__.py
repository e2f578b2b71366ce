"""Tests for torch-native access, partial reads, remote sources, sharded and DCP checkpoints."""
