"""Tests of burnpack.cli: every command as a person sees it."""
