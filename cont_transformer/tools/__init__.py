"""Tools over trained models of any family: compression, compression sweeps, the scripts' error handling.

The top layer: they use the core, the models, the training scaffold and the harnesses, and
reach every model family through the registry (:mod:`cont_transformer.runtime.families`), never
importing an application (docs/design.md §1, §9); nothing below imports them. The
benchmark's cases and baselines, which do import the applications, live in
:mod:`cont_transformer.benchmarks`.
"""
