"""Graph passes: one module per pass (hetcc.passes)."""
