"""Tools over trained models of any family: compression, compression sweeps, benchmarks.

The top layer: they use the core, the models and the applications; nothing below
imports them.
"""
