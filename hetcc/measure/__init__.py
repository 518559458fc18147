"""Measurement: host profiling, observations files, measured targets, calibration."""
