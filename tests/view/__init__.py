"""Tests for `burnpack view`: the page it writes, and that page in a real browser."""
