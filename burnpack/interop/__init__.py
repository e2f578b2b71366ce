"""Readers and writers for the formats Burn imports weights from.

``pytorch`` reads ``torch.save`` checkpoints without torch and without running pickled code;
``safetensors`` reads and writes ``.safetensors`` files with full validation. Both hand back plain
``numpy`` arrays keyed by dotted tensor names, ready to be packed into a ``.bpk`` file.
"""
