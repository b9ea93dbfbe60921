"""The benchmark's cases and the discrete baselines they are measured against.

A leaf on the top floor: it uses the harness (:mod:`cont_transformer.runtime.measuring`), the
models and the applications' trainers, and nothing in the library imports it.
:mod:`.transformer` holds the continuous transformer's measures (1 to 5, 7 and 8,
against :mod:`.discrete_transformer`), :mod:`.training` measure 9, :mod:`.representations`
measure 10 (the input representations), :mod:`.text_tagging`
measures 11 and 12, and :mod:`.images` the ODE-ResNet's (6 and 7, against
:mod:`.discrete_resnet`); :mod:`.workloads` holds the workloads they share.
``scripts/benchmark.py`` runs them (docs/design.md §9). :mod:`.scaling` measures commands in
fresh processes over process counts (``benchmarks/scaling.py``).
"""
