"""Helpers the tests share (never imported by the product)."""
