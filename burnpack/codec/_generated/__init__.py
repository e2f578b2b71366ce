# generated from schema/metadata.toml and schema/layout.py by schema/generate.py — do not edit
"""Code generated from schema/ — see schema/generate.py."""
