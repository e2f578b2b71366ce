"""Tests of the record layer (module, optimizer, scheduler records; checkpoints)."""
