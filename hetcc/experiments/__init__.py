"""Experiments at scale: sweeps over Ray and Ray Tune over planner options."""
