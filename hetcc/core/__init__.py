"""Leaves every part of hetcc may import: the error hierarchy, numeric limits, cache paths."""
