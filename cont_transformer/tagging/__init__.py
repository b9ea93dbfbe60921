"""The tagging application: CoNLL-U data, batching, the tagger's training and tagging text.

Built on the core (bases, integrators, ``OdeBlock``), the continuous transformer model
and the training scaffold (:mod:`cont_transformer.training`); the tools
(:mod:`cont_transformer.tools`) build on it, never the other way round.
"""
