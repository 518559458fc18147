"""The compiler core: the Python API, the pass pipeline, the program IR, the cost model."""
